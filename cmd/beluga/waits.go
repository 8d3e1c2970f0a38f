package main

import (
	"fmt"
	"strconv"

	"github.com/beluga-scheduler/beluga/api"
)

// printWaits lists why each task of a running instance is not running:
// its attempts that wait, then the tasks with no attempt yet.
func (a *app) printWaits(d api.InstanceDetail) error {
	t := newTable(a.stdout, "WAITING TASK", "TASK ID", "CAUSE", "WHY")
	n := 0
	for _, ti := range d.Tasks {
		if ti.Wait != nil {
			t.row(ti.Name, strconv.FormatInt(ti.ID, 10), ti.Wait.Cause, oneLine(ti.Wait.Reason))
			n++
		}
	}
	for _, p := range d.Pending {
		t.row(p.Name, "", p.Wait.Cause, oneLine(p.Wait.Reason))
		n++
	}
	if n == 0 {
		return nil
	}
	fmt.Fprintln(a.stdout)
	return t.flush()
}

// waitText is a wait on one line: "cause: reason".
func waitText(w api.Wait) string { return w.Cause + ": " + oneLine(w.Reason) }
