package flow

import (
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
)

// One flush of the owner, as data: Plan turns the decisions gathered since
// the last flush into the rows to write (numbered, superseding, in the
// state each is written in), and Then says what becomes of each row once
// written. The owner runs the types' code on the rows Plan leaves to it
// (params, a branching type's decision, a dry run), writes them in one
// transaction and carries out Then for each: a flat loop with no decision
// of its own.

// Row is one new attempt to write.
type Row struct {
	Name    string
	Kind    Kind    // which decision asked for it
	Attempt Attempt // its number, budget and whether it supersedes the latest row
	Write   Write   // how it is written: the owner runs a Dry or Decide row's type code first
	// State is the state it is written in: submitted, delayed (a retry
	// waiting out its interval), paused or killed (held), skipped. The
	// owner's type code may end a row before it is written (failed, or a
	// dry run or decision succeeded).
	State model.TaskState
	Due   time.Time // a delayed retry: when it is submitted
}

// PlanIn is what Plan needs from outside the machine.
type PlanIn struct {
	Now time.Time
	// Limit bounds the ready tasks planned (the rest wait for the next
	// plan): one transaction of a fan-out of 100,000 rows holds a write
	// lock for tens of seconds. Zero: no bound.
	Limit int
	// FailedAt is when the failed attempt a retry follows ended (the DB's
	// time, so the clock survives a failover); zero: unknown, now.
	FailedAt func(name string) time.Time
}

// Plan turns gathered decisions d into the rows to write now, in order:
// ready tasks (up to in.Limit), lost attempts run anew, retries, skips. It
// numbers each (Number) and says how it is written (WriteOf): a halt holds
// it (HeldAs), a retry whose interval has not passed is delayed. rest is
// what did not fit, for the next plan.
func (f *Flow) Plan(d Decisions, in PlanIn) (rows []Row, rest Decisions) {
	ready := d.Submit
	if in.Limit > 0 && len(ready) > in.Limit {
		ready, rest.Submit = ready[:in.Limit], ready[in.Limit:]
	}
	rows = make([]Row, 0, len(ready)+len(d.Again)+len(d.Retry)+len(d.Skip))
	add := func(names []string, kind Kind) {
		for _, name := range names {
			if f.ts[name] == nil {
				continue // not of this graph: nothing to write
			}
			r := Row{Name: name, Kind: kind, Attempt: f.Number(name, kind), State: model.TaskSubmitted}
			if kind == Skipped {
				r.Write, r.State = Skip, model.TaskSkipped
			} else {
				r.Write = f.WriteOf(name)
			}
			switch {
			case r.Write == Held:
				r.State = f.HeldAs()
			case kind == Retried:
				from := time.Time{}
				if in.FailedAt != nil {
					from = in.FailedAt(name)
				}
				if from.IsZero() {
					from = in.Now
				}
				if at := from.Add(f.specs[name].RetryInterval); at.After(in.Now) {
					r.State, r.Due = model.TaskDelayed, at
				}
			}
			rows = append(rows, r)
		}
	}
	add(ready, Fresh)
	add(d.Again, Again)
	add(d.Retry, Retried)
	add(d.Skip, Skipped)
	return rows, rest
}

// Then is what the owner does with a row once it is written.
type Then uint8

// Thens.
const (
	Launch Then = iota // submitted: to whatever runs its type (the dispatcher, or the master's logic tasks)
	Wait               // delayed: its due time on the state wheel, submitted then
	Hold               // held by a pause or stop: it ends for the machine (Finished) as written
	Report             // ended as written (a failure, a dry run, a decision): taken as its result, like a worker's
	Done               // skipped: the machine skipped it already
)

// ThenOf is what follows the write of a row now in state st.
func ThenOf(st model.TaskState) Then {
	switch st {
	case model.TaskSubmitted:
		return Launch
	case model.TaskDelayed:
		return Wait
	case model.TaskPaused, model.TaskKilled:
		return Hold
	case model.TaskSkipped:
		return Done
	}
	return Report
}
