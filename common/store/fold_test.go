package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// The hottest writes check the term inside their first statement on SQLite
// (store.foldedTx): a stale term must still be refused by each, whether its
// statement would have matched rows or not, in small and large batches, and
// change nothing; the current term's writes go through.
func TestFencedHotWrites(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		s.CreateProject(ctx, "demo", "")
		s.PutWorkflow(ctx, "demo", mustSpec(t, diamond))
		inst, _ := s.CreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "diamond"})
		if err := s.BeginTerm(ctx, 3, "m1"); err != nil {
			t.Fatal(err)
		}
		old := s.Term(3)
		var tasks []*model.TaskInstance
		for range 6 {
			tasks = append(tasks, &model.TaskInstance{WorkflowInstanceID: inst.ID, Name: "a", Type: "shell", State: model.TaskSubmitted, Attempt: 1})
		}
		if err := old.InsertTaskInstances(ctx, tasks); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		if ok, err := old.MarkDispatched(ctx, []store.Dispatch{{ID: tasks[0].ID, Host: "w", Time: now}}); err != nil || !ok[0] {
			t.Fatalf("dispatch in term 3: %v %v", ok, err)
		}
		if err := s.BeginTerm(ctx, 4, "m2"); err != nil {
			t.Fatal(err)
		}
		before, _ := s.ListTaskInstances(ctx, inst.ID)

		one := []store.Dispatch{{ID: tasks[1].ID, Host: "w", Time: now}}
		var many []store.Dispatch
		for _, tk := range tasks[1:] {
			many = append(many, store.Dispatch{ID: tk.ID, Host: "w", Time: now})
		}
		gone := []store.Dispatch{{ID: tasks[0].ID, Host: "w", Time: now}} // matches no row anyway
		for name, ds := range map[string][]store.Dispatch{"one": one, "many": many, "no longer submitted": gone} {
			if ok, err := old.MarkDispatched(ctx, ds); !errors.Is(err, store.ErrFenced) {
				t.Errorf("stale dispatch (%s): %v %v", name, ok, err)
			}
		}
		ack := store.Report{ID: tasks[0].ID, Kind: store.ReportAck, Host: "w", LogPath: "/l"}
		foreign := store.Report{ID: tasks[0].ID, Kind: store.ReportAck, Host: "other", LogPath: "/l"}
		var acks []store.Report
		for range 5 {
			acks = append(acks, ack)
		}
		for name, rs := range map[string][]store.Report{"one": {ack}, "many": acks, "matching no row": {foreign}} {
			if out, err := old.ApplyReports(ctx, rs); !errors.Is(err, store.ErrFenced) {
				t.Errorf("stale reports (%s): %v %v", name, out, err)
			}
		}
		if after, _ := s.ListTaskInstances(ctx, inst.ID); !sameTasks(before, after) {
			t.Fatalf("stale writes changed tasks:\n%+v\n%+v", before, after)
		}

		cur := s.Term(4)
		if out, err := cur.ApplyReports(ctx, []store.Report{ack, foreign}); err != nil || out[0] != store.Applied || out[1] != store.Foreign {
			t.Fatalf("current term's reports: %v %v", out, err)
		}
		if ok, err := cur.MarkDispatched(ctx, many); err != nil || len(ok) != len(many) || !ok[0] || !ok[len(ok)-1] {
			t.Fatalf("current term's dispatch: %v %v", ok, err)
		}
		if ok, err := cur.MarkDispatched(ctx, gone); err != nil || ok[0] {
			t.Fatalf("current term's dispatch of a dispatched task: %v %v", ok, err)
		}
	})
}

func sameTasks(a, b []model.TaskInstance) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].State != b[i].State || a[i].Host != b[i].Host || a[i].LogPath != b[i].LogPath {
			return false
		}
	}
	return true
}
