package flow

import "github.com/beluga-scheduler/beluga/common/model"

// The rows the owner writes for the machine's decisions: how each new
// attempt is numbered, which row it supersedes, and in what state it is
// written (queued, held by a pause or stop, ended by a dry run, decided by
// a branching type as it is written). The owner supplies what is not
// pure (row ids, the clock, the types' code) and writes what this says.

// Kind is why a new attempt is written (the Decisions list it came from).
type Kind uint8

// Kinds.
const (
	Fresh   Kind = iota // Submit: the first attempt of a (new) retry budget
	Skipped             // Skip: written skipped, never run
	Again               // Again: a lost or killed attempt runs anew in its budget
	Retried             // Retry: the next attempt of a failed one in its budget
)

// Attempt is the numbering of one new attempt of a task.
type Attempt struct {
	Number int // the attempt number of the new row
	Base   int // the attempt that began its retry budget
	// Supersedes: the task's latest row (the owner knows its id) is
	// superseded by this one, in the same write.
	Supersedes bool
}

// Redo forgets that a task ran as far as the machine is concerned while
// keeping its numbering: the next attempt of name (rerun, recover_failed)
// is numbered after attempt, begins a new budget and supersedes it. The
// owner does not Restore a task it redoes.
func (f *Flow) Redo(name string, attempt int) {
	if t := f.ts[name]; t != nil {
		t.attempt, t.redo = attempt, true
	}
}

// Number numbers the new attempt of name that a decision of kind asks for,
// and records it as the task's latest. Call it once per name in a
// decision, when the row is written.
func (f *Flow) Number(name string, kind Kind) Attempt {
	t := f.ts[name]
	if t == nil {
		return Attempt{}
	}
	var a Attempt
	switch kind {
	case Fresh, Skipped:
		a = Attempt{Number: 1, Base: 1}
		if t.redo { // a rerun's: numbered on from the attempt it forgot
			a = Attempt{Number: t.attempt + 1, Base: t.attempt + 1, Supersedes: true}
			t.redo = false
		}
	default:
		a = Attempt{Number: t.attempt + 1, Base: t.base, Supersedes: true}
	}
	t.attempt, t.base = a.Number, a.Base
	return a
}

// Write is how a new attempt is written.
type Write uint8

// Writes.
const (
	Queue  Write = iota // submitted (or delayed): it goes to whatever runs its type
	Held                // a pause or stop is in progress: written as Held says, ended at once
	Dry                 // a dry run: written succeeded (its type's dry run may fail it), never run
	Decide              // a branching type: decided as it is written, never queued
	Skip                // a branch not taken: written skipped, never run
)

// WriteOf says how a new attempt of name, not skipped, is written now. A
// halt holds everything; a dry run goes through every task, branches too
// (its upstreams export nothing to decide on, so it takes them all); else a
// branching type decides as it is written and anything else is queued.
func (f *Flow) WriteOf(name string) Write {
	switch {
	case f.halt != Running:
		return Held
	case f.dry:
		return Dry
	case f.specs[name].Decides:
		return Decide
	}
	return Queue
}

// HeldAs is the state a held attempt is written in: paused under a pause
// (it starts on resume), killed under a stop.
func (f *Flow) HeldAs() model.TaskState {
	if f.halt == Stop {
		return model.TaskKilled
	}
	return model.TaskPaused
}

// DryRun makes the instance a dry run (WriteOf).
func (f *Flow) DryRun() { f.dry = true }
