package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

func eventTrail(es []model.Event) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = fmt.Sprintf("%s/%s/%s", e.Kind, e.TaskName, e.State)
	}
	return out
}

// Every state write leaves one outbox row in its transaction; the publisher
// numbers them in order (on SQLite they are public at commit, seq = id, and
// the publisher hands them over) and readers filter and resume by seq.
func TestEventOutbox(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		if err := s.TermBegin(ctx, 3, "m1"); err != nil {
			t.Fatal(err)
		}
		lead := s.Term(3)
		cur, err := lead.EventCursorNew(ctx)
		if err != nil {
			t.Fatal(err)
		}
		publish := func(n int) ([]model.Event, error) { return lead.EventPublishFrom(ctx, &cur, n) }
		s.ProjectCreate(ctx, "demo", "")
		s.WorkflowPut(ctx, "demo", mustSpec(t, diamond))
		inst, err := s.InstanceCreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "diamond"})
		if err != nil {
			t.Fatal(err)
		}
		other, _ := s.InstanceCreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "diamond"})
		// Concurrent writers: none before the publisher numbers them; serial
		// writes (SQLite): ids commit in order and the seq is the id.
		visible := 0
		if s.SerialWrites() {
			visible = 2
		}
		if got, _ := s.EventList(ctx, 0, model.EventFilter{}, 100); len(got) != visible {
			t.Fatalf("%d events visible before publishing, want %d: %v", len(got), visible, got)
		}
		if _, err := lead.InstanceClaimCommands(ctx, "m1", 3, 1); err != nil {
			t.Fatal(err)
		}
		now := time.Now().UTC()
		task := &model.TaskInstance{WorkflowInstanceID: inst.ID, Name: "a", Type: "shell", State: model.TaskSubmitted, Attempt: 1, SubmitTime: &now}
		if err := lead.TaskInsert(ctx, []*model.TaskInstance{task}); err != nil {
			t.Fatal(err)
		}
		lead.TaskMarkDispatched(ctx, []model.Dispatch{{ID: task.ID, Host: "w1", Time: now}})
		lead.TaskApplyReports(ctx, []model.Report{
			{ID: task.ID, Kind: model.ReportAck, Host: "w1", LogPath: "/l"},
			{ID: task.ID, Kind: model.ReportAck, Host: "w1", LogPath: "/l"},
		})
		lead.TaskApplyReports(ctx, []model.Report{{ID: task.ID, Kind: model.ReportRunning, Host: "w1", PID: 4, StartTime: now}})
		lead.TaskApplyReports(ctx, []model.Report{{ID: task.ID, Kind: model.ReportResult, Host: "w1", State: model.TaskFailed, StartTime: now, EndTime: now}})
		lead.TaskApplyReports(ctx, []model.Report{{ID: task.ID, Kind: model.ReportResult, Host: "w1", State: model.TaskFailed, StartTime: now, EndTime: now}}) // re-sent
		if err := lead.InstanceFinish(ctx, inst.ID, model.WorkflowFailed, now, "a failed"); err != nil {
			t.Fatal(err)
		}

		if _, err := s.Term(2).EventPublishFrom(ctx, &store.EventCursor{Last: 0}, 100); err == nil {
			t.Fatal("a stale term published events")
		}
		first, err := publish(3)
		if err != nil || len(first) != 3 {
			t.Fatalf("publish 3: %v %v", first, err)
		}
		rest, err := publish(100)
		if err != nil {
			t.Fatal(err)
		}
		all, err := s.EventList(ctx, 0, model.EventFilter{Instance: inst.ID}, 100)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"instance//submitted", "instance//running", "task/a/submitted", "task/a/dispatched",
			"task/a/running", "task/a/failed", "instance//failed"}
		if fmt.Sprint(eventTrail(all)) != fmt.Sprint(want) {
			t.Fatalf("events of instance %d:\n got %v\nwant %v", inst.ID, eventTrail(all), want)
		}
		if len(first)+len(rest) != len(want)+1 { // + the other run's submitted
			t.Fatalf("published %d+%d events, want %d", len(first), len(rest), len(want)+1)
		}
		for i := 1; i < len(all); i++ {
			if all[i].Seq <= all[i-1].Seq {
				t.Fatalf("seq not increasing: %v", all)
			}
		}
		if e := all[2]; e.Project != "demo" || e.Workflow != "diamond" || e.TaskInstanceID != task.ID || e.Attempt != 1 {
			t.Fatalf("task event: %+v", e)
		}
		after, _ := s.EventList(ctx, all[3].Seq, model.EventFilter{Project: "demo"}, 100)
		if len(after) != 3 {
			t.Fatalf("resume after %d: %v", all[3].Seq, eventTrail(after))
		}
		if got, _ := s.EventList(ctx, 0, model.EventFilter{Instance: other.ID}, 100); len(got) != 1 {
			t.Fatalf("other instance: %v", eventTrail(got))
		}
		insts, _ := s.EventList(ctx, 0, model.EventFilter{Instance: inst.ID, Kinds: []string{model.EventInstance}}, 100)
		if fmt.Sprint(eventTrail(insts)) != "[instance//submitted instance//running instance//failed]" {
			t.Fatalf("kinds instance: %v", eventTrail(insts))
		}
		if got, _ := s.EventList(ctx, 0, model.EventFilter{Kinds: []string{}}, 100); len(got) != 0 {
			t.Fatalf("no kinds: %v", eventTrail(got))
		}

		// Pruning keeps the newest published event, so seqs go on from it.
		last, _ := s.EventLastSeq(ctx)
		if n, err := s.EventPrune(ctx, time.Now().Add(time.Hour), 0); err != nil || n != last-1 {
			t.Fatalf("prune: %d %v (last %d)", n, err, last)
		}
		lead.InstanceFinish(ctx, other.ID, model.WorkflowStopped, now, "")
		more, _ := publish(100)
		if len(more) != 1 || more[0].Seq <= last {
			t.Fatalf("after prune: %+v (last %d)", more, last)
		}
	})
}
