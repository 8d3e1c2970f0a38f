package executor

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/logging"
	"github.com/beluga-scheduler/beluga/common/tasktype"
	"github.com/beluga-scheduler/beluga/remote/message"
)

// state is everything the owner goroutine owns. No other goroutine reads or
// writes it.
type state struct {
	tasks        map[int64]*task // every known task, including remembered finished ones
	queue        []*task         // admitted phaseQueued tasks, in dispatch order
	awaiting     int             // phaseQueued tasks not admitted yet (their ack is not DB-acked)
	seq          uint64          // dispatch counter: a task's place in the queue
	live         int             // tasks in phaseStarting or phaseRunning (slots in use)
	pending      map[int64]*task // tasks with a report not DB-acked yet
	outbox       []outItem       // reports to hand to the sender, in order
	deadlines    deadlines
	timer        *time.Timer
	armed        time.Time // deadline the timer is set for; zero when idle
	master       string    // newest master address (SetMaster or a newer epoch)
	epoch        int64     // highest master epoch seen in a dispatch
	stopping     bool
	killedAtStop []int   // process groups signalled by Stop, awaited after the loop
	memory       []int64 // ring of finished task ids, oldest at memHead
	memHead      int
}

func (s *state) init(cfg Config) {
	s.tasks = make(map[int64]*task)
	s.pending = make(map[int64]*task)
	s.master = cfg.Master
	s.timer = time.NewTimer(time.Hour)
	s.timer.Stop()
}

// loop is the owner goroutine. It returns once Stop was called (stop is
// closed) and every process has been reaped.
func (e *Executor) loop(stop <-chan struct{}) {
	defer close(e.ownerDone)
	e.stopCh = stop
	st := &e.st
	defer st.timer.Stop()
	resend := time.NewTicker(e.cfg.ResendInterval)
	defer resend.Stop()
	stopCh := e.stopCh
	for !st.stopping || st.live > 0 {
		// A nil channel disables its case: nothing to send, or no deadline.
		var out chan<- outMsg
		next, ok := e.nextOut()
		if ok {
			out = e.sendCh
		}
		select {
		case f := <-e.reqCh:
			f()
		case ev := <-e.procCh:
			e.onProc(ev)
		case out <- next:
			e.handedOff()
		case <-e.armTimer():
			st.armed = time.Time{}
			e.onDeadlines()
		case <-resend.C:
			e.resendDue()
		case <-stopCh:
			stopCh = nil
			e.beginStop()
		}
	}
}

// publish mirrors the load counters for Stats, both in one word so a reader
// never sees a task counted twice or not at all. A task awaiting admission
// counts as queued: the master gave it to this worker and it takes a slot as
// soon as its ack is persisted, so a load that left it out would invite more
// dispatches than the slots can take.
func (e *Executor) publish() {
	e.load.Store(packLoad(e.st.live, len(e.st.queue)+e.st.awaiting))
}

// stopRequested is true once Stop was called, even before the owner ran
// beginStop: nothing may be admitted or started after that.
func (e *Executor) stopRequested() bool {
	if e.st.stopping {
		return true
	}
	select {
	case <-e.stopCh:
		return true
	default:
		return false
	}
}

func (e *Executor) dispatch(d message.Dispatch) message.DispatchReply {
	st := &e.st
	select {
	case <-e.stopCh:
		return refuse(d.TaskInstanceID, "worker is stopping")
	default:
	}
	if d.Epoch < st.epoch {
		return refuse(d.TaskInstanceID, fmt.Sprintf("stale master epoch %d: this worker has seen epoch %d", d.Epoch, st.epoch))
	}
	if d.Epoch > st.epoch {
		// A newer leader: every task reports to it from now on.
		st.epoch = d.Epoch
		if d.MasterAddr != "" {
			e.setMaster(d.MasterAddr)
		}
	}
	addr := d.MasterAddr
	if addr == "" {
		addr = st.master
	}
	if addr == "" {
		return refuse(d.TaskInstanceID, "dispatch has no master_addr and no master is known")
	}
	if t := st.tasks[d.TaskInstanceID]; t != nil && t.kill.dropped() {
		// The master took the task back (a send it saw fail, a session lost)
		// and now gives it here again: a new assignment, which runs only if
		// the master persists its ack, like any other. Refusing it would
		// strand the task for as long as this worker remembers the id.
		if t.phase != phaseExited {
			return refuse(d.TaskInstanceID, "task was dropped here and its process is still being killed; try again")
		}
		delete(st.tasks, d.TaskInstanceID)
	}
	if t := st.tasks[d.TaskInstanceID]; t != nil {
		// Accepted so the master does not send it elsewhere, but not run
		// again; what the master has not persisted yet goes out now (for a
		// task awaiting admission, that is its ack).
		t.addr = addr
		e.enqueueUnacked(t)
		return message.DispatchReply{TaskInstanceID: d.TaskInstanceID, Accepted: true,
			Reason: "duplicate dispatch: task already known, not run again"}
	}
	wf := strconv.FormatInt(d.WorkflowInstanceID, 10)
	id := strconv.FormatInt(d.TaskInstanceID, 10)
	st.seq++
	t := &task{
		d:       d,
		seq:     st.seq,
		addr:    addr,
		logPath: filepath.Join(e.logDir, wf, id+".log"),
		dir:     filepath.Join(e.workDir, wf, id),
	}
	st.tasks[d.TaskInstanceID] = t
	st.awaiting++
	e.addReport(t, kindAck, message.Ack{
		TaskInstanceID:     d.TaskInstanceID,
		WorkflowInstanceID: d.WorkflowInstanceID,
		Host:               e.cfg.Host,
		LogPath:            t.logPath,
		Time:               time.Now(),
	})
	// The task waits for the master to persist this ack before it may take a
	// slot (see admit): a dispatch the master took back (a failed send retried
	// elsewhere, a stale leader) is refused at the ack and never runs, so the
	// DB alone decides where a task runs.
	e.publish()
	return message.DispatchReply{TaskInstanceID: d.TaskInstanceID, Accepted: true}
}

// admit moves t, whose ack the master persisted, into the slot queue. The
// queue stays in dispatch order (the master dispatches by priority) even when
// DB-acks come back in another order; they mostly do not, so the search from
// the tail is short.
func (e *Executor) admit(t *task) {
	st := &e.st
	t.admitted = true
	st.awaiting--
	i := len(st.queue)
	for i > 0 && st.queue[i-1].seq > t.seq {
		i--
	}
	st.queue = append(st.queue, nil)
	copy(st.queue[i+1:], st.queue[i:])
	st.queue[i] = t
	e.startQueued()
	e.publish()
}

// startQueued fills free slots from the head of the queue.
func (e *Executor) startQueued() {
	st := &e.st
	for !e.stopRequested() && st.live < e.cfg.Slots && len(st.queue) > 0 {
		t := st.queue[0]
		st.queue[0] = nil
		st.queue = st.queue[1:]
		t.phase = phaseStarting
		st.live++
		e.waiters.Add(1)
		l := launch{id: t.d.TaskInstanceID, env: e.taskEnv(t), dir: t.dir, logPath: t.logPath,
			secrets: secretValues(t.d), cgroup: "task-" + strconv.FormatInt(t.d.TaskInstanceID, 10) + "-" + strconv.Itoa(t.d.Attempt)}
		def, _ := tasktype.Lookup(typeOf(t.d)) // validate made sure it is known
		if def.Run != nil {
			ctx, cancel := context.WithCancel(context.Background())
			t.cancel = cancel
			go e.runInProcess(ctx, l, def, e.job(t))
			continue
		}
		var argv []string
		var err error
		if def.Child != nil {
			argv, err = e.childLaunch(&l, def, t)
		} else if argv, err = def.Argv(e.job(t)); err == nil {
			l.path, err = e.lookPath(argv[0])
		}
		if err == nil && t.d.Tenant != "" {
			l.tenant, err = lookupTenant(t.d.Tenant)
		} else if err == nil {
			// Never the worker's own user when it can switch: a user of
			// the task's own while one is free, else the task user.
			if l.slot = e.users.take(); l.slot != nil {
				l.tenant = &l.slot.t
			} else {
				l.tenant = e.taskUser
			}
		}
		if err != nil {
			e.waiters.Done()
			go func(id int64, err error) {
				e.procCh <- procEvent{id: id, kind: evStartFailed, at: time.Now(), err: err}
			}(t.d.TaskInstanceID, err)
			continue
		}
		l.argv = argv
		go e.runProcess(l)
	}
}

// job is t as its type's executor sees it.
func (e *Executor) job(t *task) tasktype.Job {
	return tasktype.Job{TaskInstanceID: t.d.TaskInstanceID, Name: t.d.Name, Command: t.d.Command,
		Payload: t.d.Payload, Params: t.d.Env, Dir: t.dir, Config: e.typeCfg}
}

// lookPath finds a process type's program once per name.
func (e *Executor) lookPath(name string) (string, error) {
	if p, ok := e.paths[name]; ok {
		return p, nil
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s: %w", name, err)
	}
	e.paths[name] = p
	return p, nil
}

// onProc applies one event from a process waiter.
func (e *Executor) onProc(ev procEvent) {
	st := &e.st
	t := st.tasks[ev.id] // never nil: live tasks are not forgotten
	switch ev.kind {
	case evStarted:
		t.phase, t.pid, t.start = phaseRunning, ev.pid, ev.at
		if !t.kill.silent() {
			// Held for RunningDelay: a task ending sooner reports its start
			// and pid with its Result. Meanwhile the DB row is dispatched
			// and acked, which failover and kills treat as running, and a
			// kill finds the process here.
			if e.cfg.RunningDelay < 0 {
				e.reportRunning(t)
			} else {
				t.running = st.deadlines.push(ev.at.Add(e.cfg.RunningDelay), t, dlRunning)
			}
		}
		if t.kill == killLost {
			t.signalled = true
			if t.cancel != nil {
				t.cancel()
			}
			killGroup(t.pid, syscall.SIGKILL) // dropped while it was starting
		} else if t.kill != killNone {
			e.signal(t) // killed while it was starting
			if t.kill == killStopping && t.pid > 0 {
				st.killedAtStop = append(st.killedAtStop, t.pid)
			}
		} else if t.d.TimeoutMillis > 0 {
			t.timeout = st.deadlines.push(ev.at.Add(time.Duration(t.d.TimeoutMillis)*time.Millisecond), t, dlTimeout)
		}
	case evStartFailed:
		st.live--
		t.phase = phaseExited
		e.log.Warn("task start failed", taskRef(t.d), zap.Error(ev.err))
		e.finish(t, -1, ev.at, ev.at, "start failed: "+ev.err.Error())
		e.startQueued()
	case evExited:
		st.live--
		t.phase = phaseExited
		st.deadlines.remove(t.timeout)
		st.deadlines.remove(t.escalate)
		st.deadlines.remove(t.running)
		t.timeout, t.escalate, t.running = nil, nil, nil
		if t.signalled {
			// The leader is gone but group members that ignored SIGTERM may
			// remain; the group id cannot have been reused this soon.
			killGroup(t.pid, syscall.SIGKILL)
		}
		if t.cancel != nil {
			t.cancel() // release the context of an in-process task
		}
		if g := e.cfg.Guard; g != nil && t.pid > 0 {
			g.Remove(t.pid)
		}
		msg := ev.msg
		if ev.err != nil {
			msg = "wait: " + ev.err.Error()
		} else if ev.code != 0 && msg == "" {
			msg = fmt.Sprintf("exit code %d", ev.code)
		}
		t.outputs = ev.outputs
		e.finish(t, ev.code, t.start, ev.at, msg)
		e.startQueued()
	}
	e.publish()
}

// reportRunning queues t's Running report.
func (e *Executor) reportRunning(t *task) {
	e.addReport(t, kindRunning, message.Running{
		TaskInstanceID:     t.d.TaskInstanceID,
		WorkflowInstanceID: t.d.WorkflowInstanceID,
		Host:               e.cfg.Host,
		PID:                t.pid,
		StartTime:          t.start,
	})
}

// finish reports the end of t (unless its kill is silent) and settles it.
func (e *Executor) finish(t *task, code int, start, end time.Time, msg string) {
	res := message.Result{
		TaskInstanceID:     t.d.TaskInstanceID,
		WorkflowInstanceID: t.d.WorkflowInstanceID,
		Host:               e.cfg.Host,
		ExitCode:           code,
		PID:                t.pid, // the Running report may have been held (RunningDelay)
		StartTime:          start,
		EndTime:            end,
		Message:            msg,
	}
	switch t.kill {
	case killDropped, killStopping, killLost:
		e.settle(t)
		return
	case killRequested:
		res.State = "killed"
		// Not t.pid: an in-process task runs with pid 0.
		if start.IsZero() {
			res.Message = "killed before start"
		} else {
			res.Message = "killed on request"
		}
	case killTimeout:
		res.State = "failed"
		res.Message = "timed out after " + (time.Duration(t.d.TimeoutMillis) * time.Millisecond).String()
	default:
		res.State = "succeeded"
		if code != 0 {
			res.State = "failed"
		} else {
			res.Outputs = t.outputs
		}
	}
	e.log.Debug("task finished", taskRef(t.d),
		zap.String("state", res.State), zap.Int("exit_code", code))
	e.addReport(t, kindResult, res)
}

// killRequest handles a Kill message; false when the task is unknown.
func (e *Executor) killRequest(id int64, from []zap.Field) bool {
	t := e.st.tasks[id]
	if t == nil {
		e.log.Info("kill of a task this worker does not hold", append(from, zap.Int64("unknown_task_id", id))...)
		return false
	}
	e.log.Info("kill", append(from, taskRef(t.d))...) // who asked (issue 22, item 6)
	if t.phase != phaseExited {
		e.kill(t, killRequested)
	}
	return true
}

// kill records why t must die and acts on its phase: a queued task (admitted
// or not) never starts, a running one gets its group signalled, a starting one
// is signalled when its pid arrives.
func (e *Executor) kill(t *task, why killReason) {
	if t.kill == killNone || (why.silent() && !t.kill.silent()) {
		t.kill = why
	}
	switch t.phase {
	case phaseQueued:
		e.neverStart(t)
		now := time.Now()
		e.finish(t, -1, time.Time{}, now, "")
		e.publish()
	case phaseRunning:
		e.signal(t)
	}
}

// neverStart takes a queued task out of the queue, or out of the wait for
// admission, for good.
func (e *Executor) neverStart(t *task) {
	if t.admitted {
		e.unqueue(t)
	} else {
		e.st.awaiting--
	}
	t.phase = phaseExited
}

func (e *Executor) unqueue(t *task) {
	q := e.st.queue
	for i, x := range q {
		if x == t {
			copy(q[i:], q[i+1:])
			q[len(q)-1] = nil
			e.st.queue = q[:len(q)-1]
			return
		}
	}
}

// signal sends SIGTERM to t's process group once and arms the SIGKILL; an
// in-process task has its context cancelled.
func (e *Executor) signal(t *task) {
	if t.signalled {
		return
	}
	t.signalled = true
	if t.cancel != nil {
		t.cancel()
		return
	}
	killGroup(t.pid, syscall.SIGTERM)
	t.escalate = e.st.deadlines.push(time.Now().Add(e.cfg.KillGrace), t, dlEscalate)
}

func (e *Executor) onDeadlines() {
	st := &e.st
	now := time.Now()
	for d := st.deadlines.popDue(now); d != nil; d = st.deadlines.popDue(now) {
		t := d.t
		if t.phase != phaseRunning {
			continue
		}
		switch d.kind {
		case dlTimeout:
			t.timeout = nil
			if t.kill == killNone {
				e.log.Debug("task timed out", taskRef(t.d))
				e.kill(t, killTimeout)
			}
		case dlEscalate:
			t.escalate = nil
			killGroup(t.pid, syscall.SIGKILL)
		case dlRunning:
			t.running = nil
			if !t.kill.silent() {
				e.reportRunning(t)
			}
		}
	}
}

// armTimer points the single timer at the earliest deadline; nil when none.
func (e *Executor) armTimer() <-chan time.Time {
	st := &e.st
	if len(st.deadlines) == 0 {
		if !st.armed.IsZero() {
			st.timer.Stop()
			st.armed = time.Time{}
		}
		return nil
	}
	if at := st.deadlines[0].at; !at.Equal(st.armed) {
		st.timer.Reset(time.Until(at))
		st.armed = at
	}
	return st.timer.C
}

func (e *Executor) dbAck(a message.DBAck) {
	t := e.st.tasks[a.TaskInstanceID]
	if t == nil {
		e.log.Debug("db-ack for unknown task", logging.TaskID(a.TaskInstanceID))
		return
	}
	if a.Kill {
		e.log.Info("task taken over by another worker: dropping it", taskRef(t.d))
		e.kill(t, killDropped)
		e.settle(t)
		return
	}
	k, ok := kindOf(a.Kind)
	if !ok {
		e.log.Debug("db-ack of unknown kind", taskRef(t.d), zap.String("kind", string(a.Kind)))
		return
	}
	// A later report being persisted supersedes the earlier ones: re-sending
	// an ack after the result could only confuse the master.
	for i := 0; i <= k; i++ {
		t.reports[i].acked = true
	}
	// Any DB-ack persists the ack at least. A task killed or dropped before
	// admission is phaseExited already and stays unstarted.
	if !t.admitted && t.phase == phaseQueued && !e.stopRequested() {
		e.admit(t)
	}
	e.settle(t)
}

func (e *Executor) setMaster(addr string) {
	st := &e.st
	st.master = addr
	for _, t := range st.tasks {
		if !t.done {
			t.addr = addr
		}
	}
	// Failover is when latency matters most: do not wait for the resend tick.
	for _, t := range st.pending {
		e.enqueueUnacked(t)
	}
}

// addReport stores a new report of t and queues it for sending at once.
func (e *Executor) addReport(t *task, kind int, m message.Message) {
	t.reports[kind] = report{msg: m}
	e.st.pending[t.d.TaskInstanceID] = t
	e.enqueue(t, kind)
}

func (e *Executor) enqueue(t *task, kind int) {
	r := &t.reports[kind]
	if r.queued {
		return
	}
	r.queued = true
	e.st.outbox = append(e.st.outbox, outItem{t: t, kind: kind})
}

// enqueueUnacked queues every report of t the master has not persisted, in
// production order.
func (e *Executor) enqueueUnacked(t *task) {
	if t.kill.dropped() {
		return
	}
	for k := range t.reports {
		if r := &t.reports[k]; r.msg != nil && !r.acked {
			e.enqueue(t, k)
		}
	}
}

// nextOut returns the report at the head of the outbox, skipping those that
// no longer need sending.
func (e *Executor) nextOut() (outMsg, bool) {
	st := &e.st
	for len(st.outbox) > 0 {
		it := st.outbox[0]
		r := &it.t.reports[it.kind]
		if r.msg != nil && !r.acked && !it.t.kill.dropped() { // nil: settled and cleared while queued
			return outMsg{addr: it.t.addr, msg: r.msg}, true
		}
		r.queued = false
		e.popOut()
	}
	return outMsg{}, false
}

// handedOff records that the head of the outbox went to the sender.
func (e *Executor) handedOff() {
	it := e.st.outbox[0]
	e.popOut()
	r := &it.t.reports[it.kind]
	r.queued = false
	r.sent = time.Now()
}

func (e *Executor) popOut() {
	st := &e.st
	st.outbox[0] = outItem{}
	st.outbox = st.outbox[1:]
	if len(st.outbox) == 0 {
		st.outbox = nil // let the drained backing array go
	}
}

// resendDue queues the un-acked reports not sent within the last half
// interval, so each is re-sent about once per ResendInterval.
func (e *Executor) resendDue() {
	now := time.Now()
	half := e.cfg.ResendInterval / 2
	for _, t := range e.st.pending {
		for k := range t.reports {
			r := &t.reports[k]
			if r.msg != nil && !r.acked && !r.queued && now.Sub(r.sent) >= half {
				e.enqueue(t, k)
			}
		}
	}
}

// settle forgets t's pending reports once it exited and the master has all
// of them, and remembers it for duplicate detection and log look-up.
func (e *Executor) settle(t *task) {
	if !t.settled() {
		return
	}
	st := &e.st
	delete(st.pending, t.d.TaskInstanceID)
	if t.phase != phaseExited || t.done {
		return
	}
	t.done = true
	// Remembered tasks need only their id, state and log path: let the
	// command, params and report messages go.
	t.d.Command, t.d.Env, t.d.Payload = "", nil, nil
	t.reports = [numKinds]report{}
	if len(st.memory) < e.cfg.Remembered {
		st.memory = append(st.memory, t.d.TaskInstanceID)
		return
	}
	if old := st.tasks[st.memory[st.memHead]]; old != nil && old.done {
		delete(st.tasks, st.memory[st.memHead]) // not a live re-dispatch of the same id
	}
	st.memory[st.memHead] = t.d.TaskInstanceID
	st.memHead = (st.memHead + 1) % len(st.memory)
}

// beginStop refuses further work (dispatch checks stopCh), drops the queue and
// the tasks awaiting admission, and kills every live process group silently.
// The loop ends once all are reaped. Reports still pending (the ack of a task
// awaiting admission among them) may go out until then; the master's worker
// failover settles those tasks.
func (e *Executor) beginStop() {
	st := &e.st
	st.stopping = true
	st.queue = nil
	st.awaiting = 0
	for _, t := range st.tasks {
		if t.phase == phaseQueued { // admitted or not, it never started
			t.kill = killStopping
			t.phase = phaseExited
			continue
		}
		if t.phase == phaseStarting || t.phase == phaseRunning {
			e.kill(t, killStopping)
		}
		if t.phase == phaseRunning && t.pid > 0 { // pid 0: an in-process task, no group
			st.killedAtStop = append(st.killedAtStop, t.pid)
		}
	}
	e.publish()
	e.log.Info("executor stopping", zap.Int("live", st.live))
}

// dropAll drops every task not ended yet; see DropAll. Tasks already
// dropped are not counted again, but a running one still gets SIGKILL.
func (e *Executor) dropAll(reason string) int {
	n := 0
	for _, t := range e.st.tasks {
		if t.phase == phaseExited {
			continue
		}
		if !t.kill.dropped() {
			n++
		}
		t.kill = killLost
		switch t.phase {
		case phaseQueued:
			e.neverStart(t)
		case phaseRunning:
			t.signalled = true
			if t.cancel != nil {
				t.cancel()
			}
			killGroup(t.pid, syscall.SIGKILL)
		}
		// phaseStarting: SIGKILLed when its pid arrives (onProc).
		e.settle(t)
	}
	e.publish()
	e.log.Warn("dropped every task without reporting", zap.String("reason", reason), zap.Int("tasks", n))
	return n
}
