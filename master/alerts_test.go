package master

import (
	"context"
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
)

func TestAlertTrigger(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		e    model.Event
		want string
	}{
		{model.Event{Kind: model.EventInstance, State: "failed"}, spec.AlertFailure},
		{model.Event{Kind: model.EventInstance, State: "succeeded"}, spec.AlertSuccess},
		{model.Event{Kind: model.EventInstance, State: "running"}, ""},
		{model.Event{Kind: model.EventInstance, State: "stopped"}, ""},
		{model.Event{Kind: model.EventTimeout, State: "timeout_warning"}, spec.AlertTimeout},
		{model.Event{Kind: model.EventTask, State: "submitted", Attempt: 1}, ""},
		{model.Event{Kind: model.EventTask, State: "delayed", Attempt: 2}, spec.AlertRetry},
		{model.Event{Kind: model.EventTask, State: "submitted", Attempt: 3}, spec.AlertRetry},
		{model.Event{Kind: model.EventTask, State: "failed", Attempt: 3}, ""},
	} {
		got, ok := alertTrigger(c.e)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("%+v: %q %v, want %q", c.e, got, ok, c.want)
		}
	}
	e := model.Event{InstanceID: 7, Attempt: 2}
	if alertKey(spec.AlertFailure, e, "a") == alertKey(spec.AlertFailure, model.Event{InstanceID: 7, Attempt: 1}, "a") {
		t.Fatal("a rerun's failure has the same key as the first run's")
	}
}

func TestBackoffAndDeadlineOf(t *testing.T) {
	t.Parallel()
	for n, want := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 4: 8 * time.Second, 20: time.Minute} {
		if got := backoff(time.Second, time.Minute, n); got != want {
			t.Errorf("backoff(%d) = %v, want %v", n, got, want)
		}
	}
	created := time.Date(2026, 1, 2, 3, 0, 0, 0, time.UTC)
	sched := time.Date(2026, 1, 1, 23, 0, 0, 0, time.UTC)
	inst := model.WorkflowInstance{CreatedAt: created}
	if at, ok := deadlineOf("2h", inst); !ok || !at.Equal(created.Add(2*time.Hour)) {
		t.Errorf("2h after creation: %v %v", at, ok)
	}
	inst.ScheduleTime, inst.Timezone = &sched, "Asia/Tokyo" // 2026-01-02 08:00 there
	if at, ok := deadlineOf("06:00", inst); !ok || !at.Equal(time.Date(2026, 1, 2, 21, 0, 0, 0, time.UTC)) {
		t.Errorf("06:00 Tokyo after the schedule time: %v %v", at, ok)
	}
	if _, ok := deadlineOf("", inst); ok {
		t.Error("no deadline set, yet one")
	}
}

// More alerts than the storm limit within the window on one channel: the
// first ones are sent, the rest become one summary sent when the window is
// over, and each alert's history says which.
func TestAlertStormBecomesASummary(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "b.db"), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	received := AlertReceiver(t, st, "hook")
	var many []model.Alert
	for i := range 8 {
		many = append(many, model.Alert{Key: fmt.Sprint("k", i), Channel: "hook", Kind: "failure", Message: fmt.Sprint("run ", i, " failed")})
	}
	if _, err := st.AlertAdd(ctx, many, 0); err != nil {
		t.Fatal(err)
	}
	a := newAlerter(st, zap.NewNop(), EventsConfig{}.withDefaults(), nil)
	a.stormLimit, a.stormWindow = 3, 2*time.Second
	if err := a.life.StartWith(ctx, func() error { a.life.Go(a.sender); return nil }, nil); err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	wait.Until(t, 30*time.Second, "3 alerts and a summary at the receiver", func() bool { return len(received()) >= 4 })
	if received := received(); len(received) != 4 || received[3].Kind != "summary" || !strings.Contains(received[3].Text, "5 more alerts") {
		t.Fatalf("received %+v", received)
	}
	// The summary's row is marked sent after its POST answered: wait for it.
	wait.UntilErr(t, 30*time.Second, "4 sent and 5 summarized in the history", func() error {
		hist, _ := st.AlertList(ctx, store.AlertFilter{Channel: "hook"})
		states := map[string]int{}
		for _, h := range hist {
			states[h.State]++
		}
		if states["sent"] == 4 && states["summarized"] == 5 {
			return nil
		}
		return fmt.Errorf("history states %v", states)
	})
}
