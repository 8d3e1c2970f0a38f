package executor

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/beluga-scheduler/beluga/common/tasktype"
)

// A Child type's task (sql) is this binary re-executed with the type's
// hidden subcommand, started by runProcess exactly as a shell task is: its
// tenant or the task user, the sandbox, the work dir, the log from its
// stdout and stderr, its process group killed on a kill or a timeout. Only
// its descriptors differ:
//
//	0  the input its type's Input built here (the secret it needs, opened
//	   by the worker: the child cannot read the key file)
//	1, 2  the log, as any task's
//	3  its result (tasktype.ChildResult as JSON): outputs or the error
//	4  this binary, opened at start: the child execs /proc/self/fd/4, so
//	   it runs the worker's own binary wherever it lives, even in a
//	   directory the task's user cannot enter (a test's build dir), and
//	   even after the file on disk was replaced by an upgrade.
const childSelfFD = 4

// maxChildResult bounds what the worker reads of a child's result: its
// outputs at their limits, and room for the message.
const maxChildResult = maxOutputs*(MaxOutputValue+256) + 1<<20

// openSelf opens the running binary for childLaunch; nil with the reason
// when it cannot (Child types then fail, naming it).
func openSelf() (*os.File, error) {
	if !tasktype.ChildAvailable() {
		return nil, errors.New("this binary's main does not call tasktype.MaybeRunChild")
	}
	f, err := os.Open("/proc/self/exe")
	if err != nil {
		return nil, fmt.Errorf("open this binary to run task children: %w", err)
	}
	return f, nil
}

// childLaunch fills l for a Child type's task on the owner goroutine; the
// input is built by the task's waiter (childInput), off this goroutine.
func (e *Executor) childLaunch(l *launch, def *tasktype.Def, t *task) ([]string, error) {
	if e.self == nil {
		return nil, fmt.Errorf("%s tasks run in a child process of the worker's binary and this worker cannot start one: %v", def.Name, e.selfErr)
	}
	l.child, l.job = def.Child, e.job(t)
	l.path = "/proc/self/fd/" + strconv.Itoa(childSelfFD)
	// Params reach the child in its input, already bound: its environment
	// is the worker's allowed one and the scope that finds its leftovers.
	l.env = append(append(make([]string, 0, len(e.baseEnv)+1), e.baseEnv...),
		scopeEnv+"="+e.taskScope(t.d.TaskInstanceID, t.d.Attempt))
	return []string{"beluga", tasktype.ChildCommand(def.Name)}, nil
}

// childPipes are a child's stdin and result descriptors, the worker's ends
// and the child's.
type childPipes struct {
	input        []byte
	inR, inW     *os.File
	resR, resW   *os.File
	self         *os.File
	res          bytes.Buffer
	resDone      chan struct{}
	resErr       error
	inputWritten chan struct{}
}

// childInput builds the child's input and its pipes; its secrets join the
// values the log masks.
func (e *Executor) childInput(l *launch) (*childPipes, error) {
	in, err := l.child.Input(l.job)
	if err != nil {
		return nil, err
	}
	if l.child.Secrets != nil {
		l.secrets = append(l.secrets, l.child.Secrets(in)...)
	}
	cp := &childPipes{input: in, self: e.self, resDone: make(chan struct{}), inputWritten: make(chan struct{})}
	if cp.inR, cp.inW, err = os.Pipe(); err != nil {
		return nil, fmt.Errorf("input pipe: %w", err)
	}
	if cp.resR, cp.resW, err = os.Pipe(); err != nil {
		cp.inR.Close()
		cp.inW.Close()
		return nil, fmt.Errorf("result pipe: %w", err)
	}
	return cp, nil
}

// files are the child's descriptors, in order.
func (cp *childPipes) files(outW, errW *os.File) []*os.File {
	return []*os.File{cp.inR, outW, errW, cp.resW, cp.self}
}

// started closes the child's ends (it has its copies) and, when it runs,
// feeds its input and collects its result.
func (cp *childPipes) started(ok bool) {
	cp.inR.Close()
	cp.resW.Close()
	if !ok {
		cp.inW.Close()
		cp.resR.Close()
		close(cp.resDone)
		close(cp.inputWritten)
		return
	}
	go func() {
		defer close(cp.inputWritten)
		// A child that dies before reading it all makes this fail
		// (EPIPE): its exit says why.
		_, _ = cp.inW.Write(cp.input)
		cp.inW.Close()
	}()
	go func() {
		defer close(cp.resDone)
		defer cp.resR.Close()
		n, err := io.Copy(&cp.res, io.LimitReader(cp.resR, maxChildResult+1))
		switch {
		case err != nil:
			cp.resErr = err
		case n > maxChildResult:
			cp.resErr = fmt.Errorf("over %d bytes", maxChildResult)
		}
	}()
}

// outcome applies the child's result to its exit event: the error it
// reported is the task's message, its outputs are checked as any task's.
// A child that died without a result (a signal, a crash) keeps the exit
// code's message; its log shows the rest.
func (cp *childPipes) outcome(ev *procEvent) {
	select {
	case <-cp.resDone:
	case <-time.After(5 * time.Second):
		// Something the child started still holds the descriptor.
		cp.resR.Close()
		<-cp.resDone
	}
	<-cp.inputWritten
	if ev.err != nil {
		return
	}
	var res tasktype.ChildResult
	if cp.resErr != nil || cp.res.Len() == 0 {
		if ev.code == 0 {
			ev.code, ev.msg = 1, "the task's process ended without a result"
			if cp.resErr != nil {
				ev.msg += ": " + cp.resErr.Error()
			}
		}
		return
	}
	if err := json.Unmarshal(cp.res.Bytes(), &res); err != nil {
		ev.code, ev.msg = 1, fmt.Sprintf("the task's process gave a bad result: %v", err)
		return
	}
	if res.Error != "" {
		if ev.code == 0 {
			ev.code = 1
		}
		ev.msg = res.Error
		return
	}
	if ev.code != 0 {
		return
	}
	if err := checkOutputs(res.Outputs); err != nil {
		ev.code, ev.msg = 1, err.Error()
		return
	}
	ev.outputs = res.Outputs
}

// childRefused ends a Child task whose input could not be built (a
// password this worker cannot open, a refused file) as a run that failed
// with that reason: its work dir and log exist, as for any run.
func (e *Executor) childRefused(l launch, err error) {
	e.fsMu.Lock()
	_, ferr := e.prepareFS(l, false)
	e.fsMu.Unlock()
	e.endSlot(l, nil) // nothing ran as it
	if ferr != nil {
		e.procCh <- procEvent{id: l.id, kind: evStartFailed, at: time.Now(), err: ferr}
		return
	}
	now := time.Now()
	e.procCh <- procEvent{id: l.id, kind: evStarted, at: now}
	e.procCh <- procEvent{id: l.id, kind: evExited, at: now, code: 1, msg: err.Error()}
}
