package flow

import (
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
)

// Reopening is why an owner rebuilds an instance from the DB.
type Reopening uint8

// Reopenings.
const (
	Recover       Reopening = iota // a new term adopts it, or it resumes a pause or stop its master began
	Resume                         // an operator resumed a paused or stopped instance
	Rerun                          // every task again
	RecoverFailed                  // what failed the instance, and what is after it, again
)

// Take is what the owner does with a task's restored latest attempt.
type Take uint8

// Takes.
const (
	Leave    Take = iota // finished, or held and not resumed: nothing
	Continue             // begun by the master itself (sub_workflow, dependent): taken up again, or cancelled by a halt
	Requeue              // written submitted: queued again
	Unpause              // paused and resumed: written submitted again, then queued
	RunAnew              // a new attempt in its budget (RunAgain): lost, killed and resumed, or a branching type resumed
	Delay                // a retry waiting for its interval: back on the wheel
	Ask                  // on a worker: ask it whether it still holds it (else it is lost)
)

// TakeUp says what becomes of a restored latest attempt in state st, when
// the instance is reopened for why. inMaster: its type is run by the
// master and finishes later; decides: a branching type, decided as it is
// written (a paused one is decided anew, never queued).
func TakeUp(st model.TaskState, why Reopening, inMaster, decides bool) Take {
	switch st {
	case model.TaskSubmitted, model.TaskDispatched, model.TaskRunning:
		if inMaster {
			return Continue
		}
		if st == model.TaskSubmitted {
			return Requeue
		}
		return Ask
	case model.TaskPaused:
		switch {
		case why != Resume:
			return Leave
		case decides:
			return RunAnew
		}
		return Unpause
	case model.TaskKilled:
		if why == Resume {
			return RunAnew
		}
	case model.TaskNeedFaultTolerance:
		return RunAnew
	case model.TaskDelayed:
		return Delay
	}
	return Leave
}

// Redone reports whether recover_failed runs name again, its latest
// attempt being in state st: it failed or was killed, and its failure was
// not handled (a conditions task's decision on it stands).
func (f *Flow) Redone(name string, st model.TaskState) bool {
	return (st == model.TaskFailed || st == model.TaskKilled) && !f.Handled(name)
}

// Kill is how an operator's kill of a task's latest attempt is carried out.
type Kill uint8

// Kills.
const (
	KillIgnored  Kill = iota // it is not running or queued: nothing to kill
	KillTakeBack             // queued or delayed, not yet with a worker: written killed (or killed where it went meanwhile)
	KillCancel               // running where it runs (a worker, or the master itself): cancelled there
)

// KillOf says how a kill of an attempt in state st is carried out; inMaster:
// its type is run by the master and finishes later (its owner ends it,
// submitted or running).
func KillOf(st model.TaskState, inMaster bool) Kill {
	switch st {
	case model.TaskSubmitted:
		if inMaster {
			return KillCancel
		}
		return KillTakeBack
	case model.TaskDelayed:
		return KillTakeBack
	case model.TaskDispatched, model.TaskRunning:
		return KillCancel
	}
	return KillIgnored
}

// Restored is a task's latest attempt as the DB has it, for Reopen.
type Restored struct {
	Name          string
	State         model.TaskState
	Attempt, Base int
	Chosen        []string // a branching task that succeeded: what it took (nil: all)
	Host          string   // the worker it was dispatched to
	InMaster      bool     // its type is run by the master and finishes later
	Decides       bool     // a branching type
	// PrevEnd is when the attempt before it ended (a delayed retry's clock
	// starts there); zero: unknown.
	PrevEnd time.Time
}

// Due is a delayed retry's due time.
type Due struct {
	Name string
	At   time.Time
}

// Reopened is what a rebuild does with the restored attempts, each list in
// the order the rows were given.
type Reopened struct {
	Redo     []string            // rerun, recover_failed: forgotten; their next attempts supersede them
	Continue []string            // master-run attempts: taken up again, or cancelled by the halt
	Requeue  []string            // submitted: queued again
	Unpause  []string            // paused and resumed: written submitted, then queued
	Delay    []Due               // delayed retries: back on the wheel
	Ask      map[string][]string // on a worker, by host: ask which it still holds
	// Decisions are what the restored attempts decide: retries the last
	// term did not write, attempts run anew.
	Decisions Decisions
}

// ReopenIn is what Reopen needs from outside the machine.
type ReopenIn struct {
	Why  Reopening
	Halt Halt // the instance was left pausing or stopping (ready_pause, ready_stop): finish it
	Now  time.Time
	Rows []Restored // the latest attempt of each task read back (any order)
}

// Reopen restores the machine from the DB's latest attempts and says what
// the owner does with each: the halt its master began is taken up; rerun
// redoes every task and recover_failed what failed the instance and all
// after it (Redone), forgetting their attempts (Redo); every other row of
// the graph is restored (Restore) and taken up (TakeUp). Rows of tasks
// outside the run's graph are left alone.
func (f *Flow) Reopen(in ReopenIn) Reopened {
	var out Reopened
	f.Halt(in.Halt)
	byName := make(map[string]*Restored, len(in.Rows))
	for i := range in.Rows {
		byName[in.Rows[i].Name] = &in.Rows[i]
	}
	var redo []string
	switch in.Why {
	case Rerun:
		redo = f.g.Nodes()
	case RecoverFailed:
		var bad []string
		for _, r := range in.Rows {
			if f.Redone(r.Name, r.State) {
				bad = append(bad, r.Name)
			}
		}
		redo = f.g.Descendants(bad...)
	}
	redone := map[string]bool{}
	for _, name := range redo {
		if r := byName[name]; r != nil {
			f.Redo(name, r.Attempt)
			redone[name] = true
			out.Redo = append(out.Redo, name)
		}
	}
	var anew []string
	for _, r := range in.Rows {
		if redone[r.Name] || !f.g.Has(r.Name) {
			continue
		}
		// A failed attempt with retries left gets its next attempt here: the
		// term that wrote the failure may have ended before writing it.
		out.Decisions.Add(f.Restore(r.Name, r.State, r.Attempt, r.Base, r.Chosen))
		switch TakeUp(r.State, in.Why, r.InMaster, r.Decides) {
		case Continue:
			out.Continue = append(out.Continue, r.Name)
		case Unpause:
			out.Unpause = append(out.Unpause, r.Name)
		case RunAnew:
			anew = append(anew, r.Name)
		case Delay:
			// The retry clock runs from the failed attempt's end, as written.
			at := in.Now
			if !r.PrevEnd.IsZero() {
				at = r.PrevEnd.Add(f.specs[r.Name].RetryInterval)
			}
			out.Delay = append(out.Delay, Due{Name: r.Name, At: at})
		case Requeue:
			out.Requeue = append(out.Requeue, r.Name)
		case Ask:
			if out.Ask == nil {
				out.Ask = map[string][]string{}
			}
			out.Ask[r.Host] = append(out.Ask[r.Host], r.Name)
		}
	}
	for _, name := range anew {
		out.Decisions.Add(f.RunAgain(name))
	}
	return out
}
