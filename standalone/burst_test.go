package standalone_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/beluga-scheduler/beluga/common/config"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/standalone"
	"github.com/beluga-scheduler/beluga/testkit/wait"
)

// TestManualRunDuringBurst: 300 schedules fire at one second on a
// standalone with 2 worker slots, their tasks a backlog of ~30 s of
// sleeps; an operator's run started once half the burst's tasks are
// queued starts (is claimed) within 1 s and has its task sent among the
// burst's, not behind all of them:
// burst tasks queued before it are still sent after it (before the
// dispatcher's queue gave a person's runs their turn, none were: the
// operator's run is the newest instance, so its task sorted last).
func TestManualRunDuringBurst(t *testing.T) {
	const n = 300
	e := burstServer(t, 2, n, "sleep 0.2")
	ctx := context.Background()
	st := e.store()
	e.apply("name: op\ntasks:\n  - {name: a, command: \"true\"}\n")
	// Due now, written to the store as one second's schedules (the API
	// computes the next fire time from the cron, which a loaded machine's
	// setup could pass); the PUT of the last one nudges the scheduler.
	at := time.Now().UTC().Truncate(time.Second)
	for i := range n - 1 {
		if _, _, err := st.SchedulePut(ctx, model.Schedule{Project: "demo", Workflow: fmt.Sprintf("b%03d", i), Timezone: "UTC",
			Cron: fmt.Sprintf("%d %d %d * * *", at.Second(), at.Minute(), at.Hour()), Catchup: "all", Enabled: true,
			NextFireTime: &at, Overlap: model.OverlapAllow}, nil); err != nil {
			t.Fatal(err)
		}
	}
	next := time.Now().UTC().Add(2 * time.Second).Truncate(time.Second).Add(time.Second)
	e.do("PUT", fmt.Sprintf("/api/v1/projects/demo/workflows/b%03d/schedule", n-1),
		fmt.Sprintf(`{"cron":"%d %d %d * * *","timezone":"UTC"}`, next.Second(), next.Minute(), next.Hour()), http.StatusCreated, nil)
	runs := func(wf string) int64 {
		_, total, err := st.InstanceList(ctx, store.InstanceFilter{Project: "demo", Workflow: wf, Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		return total
	}
	wait.Until(t, 2*time.Minute, "the burst's runs written", func() bool { return runs("") >= n-1 })
	tasks := func() []store.ListedTask {
		var out []store.ListedTask
		for off := 0; ; off += 1000 {
			page, _, err := st.TaskFind(ctx, store.TaskFilter{Project: "demo", Limit: 1000, Offset: off})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, page...)
			if len(page) < 1000 {
				return out
			}
		}
	}
	// The burst's backlog is queued: its runs have their tasks, few started.
	wait.Until(t, 2*time.Minute, "the burst's tasks queued", func() bool { return len(tasks()) >= n/2 })
	id := e.run("op", nil)
	iv := e.wait(id, 5*time.Minute)
	if iv.State != "succeeded" {
		t.Fatalf("operator's run %s: %+v", iv.State, iv.Tasks)
	}
	// The operator's run is claimed (started) within a second of its
	// request, the burst's backlog notwithstanding (the claim's fair share).
	opRun, err := st.InstanceGet(ctx, id)
	if err != nil || opRun.StartTime == nil {
		t.Fatalf("the operator's run: %+v %v", opRun, err)
	}
	t.Logf("the operator's run started %v after its request", opRun.StartTime.Sub(opRun.CreatedAt).Round(time.Millisecond))
	if d := opRun.StartTime.Sub(opRun.CreatedAt); d > time.Second {
		t.Errorf("the operator's run started %v after its request during the burst, want within 1 s", d)
	}
	// The burst's tasks written before the operator's (lower ids) that
	// were sent after it: none if it queued behind all of them (same
	// priority, newest instance), the backlog then with turns.
	var op *store.ListedTask
	all := tasks()
	for i := range all {
		if all[i].Workflow == "op" {
			op = &all[i]
		}
	}
	if op == nil || op.DispatchTime == nil {
		t.Fatalf("the operator's task: %+v", op)
	}
	before, after := 0, 0
	for _, tk := range all {
		if tk.Workflow == "op" || tk.ID > op.ID {
			continue
		}
		before++
		if tk.DispatchTime == nil || tk.DispatchTime.After(*op.DispatchTime) {
			after++
		}
	}
	t.Logf("of %d burst tasks written before the operator's, %d were sent after it", before, after)
	if after < 10 {
		t.Fatalf("only %d of the %d burst tasks queued before the operator's task were sent after it: it queued behind the burst", after, before)
	}
}

// TestBurstPauseBeforeItsSecond: a burst of 250 schedules due at one
// second is written ahead of it (the cron scheduler's lead); its runs are
// not started before their second, and a schedule paused over the API
// after that write and before the second fires nothing: the pause takes
// its written run back in its own transaction (without it, the run is
// left and starts at the second). The others start at their second.
func TestBurstPauseBeforeItsSecond(t *testing.T) {
	const n = 250 // above the scheduler's burst size (200)
	e := burstServer(t, config.Defaults().Worker.Slots, n, "true")
	ctx := context.Background()
	st := e.store()
	// Far enough ahead that every schedule is in before the pass that
	// writes the burst (5 s before it); the PUT of the last one nudges it.
	at := time.Now().UTC().Add(15 * time.Second).Truncate(time.Second)
	cron := fmt.Sprintf(`{"cron":"%d %d %d * * *","timezone":"UTC"}`, at.Second(), at.Minute(), at.Hour())
	for i := range n - 1 {
		if _, _, err := st.SchedulePut(ctx, model.Schedule{Project: "demo", Workflow: fmt.Sprintf("b%03d", i), Timezone: "UTC",
			Cron: fmt.Sprintf("%d %d %d * * *", at.Second(), at.Minute(), at.Hour()), Enabled: true,
			NextFireTime: &at, Overlap: model.OverlapAllow}, nil); err != nil {
			t.Fatal(err)
		}
	}
	e.do("PUT", fmt.Sprintf("/api/v1/projects/demo/workflows/b%03d/schedule", n-1), cron, http.StatusCreated, nil)
	runs := func(wf string) []model.WorkflowInstance {
		var out []model.WorkflowInstance
		for f := (store.InstanceFilter{Project: "demo", Workflow: wf, Limit: 1000, Keyset: true}); ; {
			page, _, err := st.InstanceList(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			page, more := f.More(page)
			out = append(out, page...)
			if !more {
				return out
			}
			f.Before = page[len(page)-1].ID
		}
	}
	wait.Until(t, 2*time.Minute, "the burst written", func() bool { return len(runs("")) >= n })
	if now := time.Now(); !now.Before(at.Add(-500 * time.Millisecond)) {
		t.Fatalf("the burst of %d was written %v after its second %v, not ahead of it: nothing to pause before it", n, now.Sub(at), at)
	}
	for _, r := range runs("") {
		if r.State != model.WorkflowSubmitted || r.StartTime != nil {
			t.Fatalf("run %d of %s is %s before its second %v", r.ID, r.Workflow, r.State, at)
		}
	}
	// Paused (over the API, as a person would) before the second.
	e.do("PUT", "/api/v1/projects/demo/workflows/b000/schedule",
		fmt.Sprintf(`{"cron":"%d %d %d * * *","timezone":"UTC","enabled":false}`, at.Second(), at.Minute(), at.Hour()), http.StatusOK, nil)
	if time.Now().After(at) {
		t.Fatalf("the pause landed after the second %v: the test proves nothing on a machine this loaded", at)
	}
	if got := runs("b000"); len(got) != 0 {
		t.Fatalf("paused before its second, the schedule still has %d run(s): %+v", len(got), got[0])
	}
	// The others start at their second, none before it; the paused one
	// never fires.
	wait.Until(t, 5*time.Minute, "the burst's runs started", func() bool {
		for _, r := range runs("") {
			if r.StartTime == nil {
				return false
			}
		}
		return true
	})
	all := runs("")
	if len(all) != n-1 {
		t.Fatalf("%d runs, want %d (one each but the paused one)", len(all), n-1)
	}
	for _, r := range all {
		if r.Workflow == "b000" {
			t.Fatalf("the paused schedule fired: run %d", r.ID)
		}
		if r.StartTime.Before(at) || r.ScheduleTime == nil || !r.ScheduleTime.Equal(at) {
			t.Fatalf("run %d of %s: schedule time %v, started %v; want started at or after %v", r.ID, r.Workflow, r.ScheduleTime, r.StartTime, at)
		}
	}
	sc, err := st.ScheduleGet(ctx, "demo", "b000")
	if err != nil || sc.Enabled || sc.LastFireTime != nil {
		t.Fatalf("paused schedule: %+v %v (want disabled, never fired)", sc, err)
	}
}

// burstServer starts a standalone with slots worker slots (warnings
// logged) and project demo holding n one-task workflows b000.. running
// command.
func burstServer(t *testing.T, slots, n int, command string) *env {
	t.Helper()
	c := config.Defaults()
	c.DataDir, c.API.Listen, c.Worker.Slots = t.TempDir(), "127.0.0.1:0", slots
	sa, err := standalone.Start(context.Background(), c, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sa.Stop)
	e := &env{t: t, sa: sa, base: "http://" + sa.API.Addr(), dir: c.DataDir}
	e.do("POST", "/api/v1/projects", `{"name":"demo"}`, http.StatusCreated, nil)
	for i := range n {
		e.apply(fmt.Sprintf("name: b%03d\ntasks:\n  - {name: a, command: %q}\n", i, command))
	}
	return e
}
