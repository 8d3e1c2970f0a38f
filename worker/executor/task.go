package executor

import (
	"context"
	"time"

	"github.com/beluga-scheduler/beluga/remote/message"
)

// phase is where a task is in its one run.
type phase uint8

const (
	phaseQueued   phase = iota // awaiting admission (its ack DB-acked), then a slot
	phaseStarting              // waiter goroutine launched, pid not known yet
	phaseRunning               // process started
	phaseExited                // process reaped, or never started
)

// killReason says why a task is being killed and what to report.
type killReason uint8

const (
	killNone      killReason = iota
	killRequested            // Kill message: report "killed"
	killTimeout              // TimeoutMillis exceeded: report "failed"
	killDropped              // DBAck with Kill: taken over elsewhere, report nothing
	killStopping             // worker Stop: report nothing (see Stop)
	killLost                 // DropAll (registry session lost): SIGKILL at once, report nothing
)

// silent kills produce no further reports.
func (r killReason) silent() bool { return r == killDropped || r == killStopping || r == killLost }

// dropped tasks are forgotten: nothing of theirs is sent again. A later
// dispatch of the same id is a new assignment by the master and is accepted
// once the dropped process is gone (its ack decides where it runs).
func (r killReason) dropped() bool { return r == killDropped || r == killLost }

// Report kinds, in the order they are produced; index into task.reports.
const (
	kindAck = iota
	kindRunning
	kindResult
	numKinds
)

func kindOf(k message.AckKind) (int, bool) {
	switch k {
	case message.KindAck:
		return kindAck, true
	case message.KindRunning:
		return kindRunning, true
	case message.KindResult:
		return kindResult, true
	}
	return 0, false
}

// report is one worker->master message kept until the master DB-acks it.
type report struct {
	msg    message.Message // nil until produced
	acked  bool
	queued bool      // in the outbox, not handed to the sender yet
	sent   time.Time // last hand-off to the sender
}

// task is one accepted task instance. Owned by the owner goroutine.
type task struct {
	d         message.Dispatch
	seq       uint64 // dispatch order, kept by the slot queue
	addr      string // master address its reports go to
	logPath   string
	dir       string
	phase     phase
	admitted  bool // the master persisted the ack: the task is in the slot queue or past it
	pid       int
	cancel    context.CancelFunc // an in-process task's kill; nil for a process
	outputs   map[string]string  // exported by a run that succeeded
	start     time.Time
	kill      killReason
	signalled bool      // SIGTERM sent to the group
	timeout   *deadline // armed while running with a timeout
	escalate  *deadline // armed between SIGTERM and SIGKILL
	running   *deadline // armed from start until its Running report is due
	reports   [numKinds]report
	done      bool // exited and nothing left to report: only remembered
}

// settled reports whether nothing is left to send for t.
func (t *task) settled() bool {
	if t.kill.dropped() {
		return true
	}
	for i := range t.reports {
		if r := &t.reports[i]; r.msg != nil && !r.acked {
			return false
		}
	}
	return true
}

// outItem is one report waiting in the outbox.
type outItem struct {
	t    *task
	kind int
}

// outMsg is handed to the sender goroutine.
type outMsg struct {
	addr string
	msg  message.Message
}
