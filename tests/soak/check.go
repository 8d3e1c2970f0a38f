package soak

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/schedule"
)

// Facts is what the soak reads once the cluster has drained: the ledger,
// and the database's instances, task rows and schedules.
type Facts struct {
	Ledger    []Entry
	Instances []model.WorkflowInstance
	Tasks     map[int64][]model.TaskInstance // by workflow instance id
	Schedules []model.Schedule
	// MayStop names the workflows whose runs may end stopped: those of a
	// schedule under overlap replace, whose next fire stops them.
	MayStop map[string]bool
}

// Violation is one broken invariant.
type Violation struct {
	Invariant string // attempt-row, doubled, lost, final, outcome, fire-times
	Detail    string
}

func (v Violation) String() string { return v.Invariant + ": " + v.Detail }

// Check returns every invariant the facts break, in a stable order. Every
// workload task succeeds on its first attempt but the retry task's, which
// succeeds on its second: a failed instance is a finding.
func Check(f Facts) []Violation {
	var out []Violation
	add := func(inv, format string, args ...any) {
		out = append(out, Violation{inv, fmt.Sprintf(format, args...)})
	}
	rows := map[int64]model.TaskInstance{} // by task instance id
	rowInstance := map[int64]int64{}
	for id, ts := range f.Tasks {
		for _, t := range ts {
			rows[t.ID], rowInstance[t.ID] = t, id
		}
	}
	starts, ends := map[int64][]Entry{}, map[int64][]Entry{}
	for _, e := range f.Ledger {
		r, ok := rows[e.TaskInstance]
		if !ok || rowInstance[e.TaskInstance] != e.Instance || r.Name != e.Task || r.Attempt != e.Attempt {
			add("attempt-row", "execution of instance %d task %s attempt %d (task instance %d) matches no attempt row",
				e.Instance, e.Task, e.Attempt, e.TaskInstance)
			continue
		}
		if e.End {
			ends[e.TaskInstance] = append(ends[e.TaskInstance], e)
		} else {
			starts[e.TaskInstance] = append(starts[e.TaskInstance], e)
		}
	}
	for _, id := range sortedKeys(starts) {
		if s := starts[id]; len(s) > 1 {
			r := rows[id]
			add("doubled", "instance %d task %s attempt %d (task instance %d) started %d times (%s)",
				rowInstance[id], r.Name, r.Attempt, id, len(s), entryTimes(s))
		}
	}
	for _, id := range sortedKeys(rows) {
		r := rows[id]
		if !r.State.Success() {
			continue
		}
		ok := 0
		for _, e := range ends[id] {
			if e.RC == 0 {
				ok++
			}
		}
		if len(starts[id]) != 1 || ok != 1 {
			add("lost", "instance %d task %s attempt %d (task instance %d) is %s but the ledger has %d starts and %d successful ends",
				rowInstance[id], r.Name, r.Attempt, id, r.State, len(starts[id]), ok)
		}
	}
	insts := append([]model.WorkflowInstance(nil), f.Instances...)
	sort.Slice(insts, func(i, j int) bool { return insts[i].ID < insts[j].ID })
	for _, in := range insts {
		if !in.State.Finished() {
			add("final", "instance %d (%s) is %s after the drain", in.ID, in.Workflow, in.State)
			continue
		}
		for _, t := range f.Tasks[in.ID] {
			if !t.State.Finished() {
				add("final", "instance %d (%s) is %s with task %s attempt %d still %s",
					in.ID, in.Workflow, in.State, t.Name, t.Attempt, t.State)
			}
		}
		switch {
		case in.State == model.WorkflowSucceeded:
		case in.State == model.WorkflowStopped && f.MayStop[in.Workflow]:
		default:
			add("outcome", "instance %d (%s) ended %s (%s): %s", in.ID, in.Workflow, in.State, in.Reason, rowSummary(f.Tasks[in.ID]))
		}
	}
	for _, sc := range f.Schedules {
		out = append(out, checkFires(sc, insts)...)
	}
	return out
}

// checkFires checks that every fire time of the schedule, from its first
// run to its last fire, has exactly one run or was counted skipped.
func checkFires(sc model.Schedule, insts []model.WorkflowInstance) []Violation {
	var out []Violation
	add := func(format string, args ...any) {
		out = append(out, Violation{"fire-times", fmt.Sprintf("schedule of %s (%s, overlap %s): ", sc.Workflow, sc.Cron, sc.Overlap) + fmt.Sprintf(format, args...)})
	}
	c, err := schedule.Parse(sc.Cron, sc.Timezone)
	if err != nil {
		add("cron: %v", err)
		return out
	}
	runs := map[time.Time][]int64{}
	var first time.Time
	for _, in := range insts {
		if in.ScheduleID != sc.ID || in.ScheduleTime == nil {
			continue
		}
		st := in.ScheduleTime.UTC()
		runs[st] = append(runs[st], in.ID)
		if first.IsZero() || st.Before(first) {
			first = st
		}
	}
	if len(runs) == 0 || sc.LastFireTime == nil {
		if sc.SkippedFires > 0 || len(runs) > 0 {
			add("%d runs and %d skipped fires but no last fire time", len(runs), sc.SkippedFires)
		}
		return out
	}
	last := sc.LastFireTime.UTC()
	times, _ := c.Between(first, last, 1<<20)
	due := map[time.Time]bool{}
	for _, t := range times {
		due[t.UTC()] = true
	}
	for _, t := range sortedTimes(runs) {
		ids := runs[t]
		if len(ids) > 1 {
			add("fire time %s has %d runs %v", t.Format(time.TimeOnly), len(ids), ids)
		}
		if !due[t] {
			add("run %v for %s, not a fire time in [%s, %s]", ids, t.Format(time.RFC3339), first.Format(time.TimeOnly), last.Format(time.TimeOnly))
		}
	}
	if n := int64(len(runs)) + sc.SkippedFires; n != int64(len(times)) {
		add("%d fire times from %s to %s, but %d runs and %d skipped fires: %d fires lost",
			len(times), first.Format(time.TimeOnly), last.Format(time.TimeOnly), len(runs), sc.SkippedFires, int64(len(times))-n)
	}
	return out
}

func rowSummary(ts []model.TaskInstance) string {
	var b strings.Builder
	for _, t := range ts {
		fmt.Fprintf(&b, "[%s attempt %d %s superseded=%v] ", t.Name, t.Attempt, t.State, t.Superseded)
	}
	return strings.TrimSpace(b.String())
}

func entryTimes(es []Entry) string {
	var s []string
	for _, e := range es {
		s = append(s, e.At.UTC().Format("15:04:05.000"))
	}
	return strings.Join(s, ", ")
}

func sortedKeys[V any](m map[int64]V) []int64 {
	out := make([]int64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func sortedTimes(m map[time.Time][]int64) []time.Time {
	out := make([]time.Time, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

// Interrupted lists the executions cut short and failed over: a start in
// the ledger without an end, of an attempt the database marks
// need_fault_tolerance (its worker was lost). Stopped and killed tasks
// are not among them.
func Interrupted(f Facts) []Entry {
	ended := map[int64]bool{}
	for _, e := range f.Ledger {
		if e.End {
			ended[e.TaskInstance] = true
		}
	}
	state := map[int64]model.TaskState{}
	for _, ts := range f.Tasks {
		for _, t := range ts {
			state[t.ID] = t.State
		}
	}
	var out []Entry
	for _, e := range f.Ledger {
		if !e.End && !ended[e.TaskInstance] && state[e.TaskInstance] == model.TaskNeedFaultTolerance {
			out = append(out, e)
		}
	}
	return out
}
