package flow

import "github.com/beluga-scheduler/beluga/common/model"

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
