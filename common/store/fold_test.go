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
		s.ProjectCreate(ctx, "demo", "")
		s.WorkflowPut(ctx, "demo", mustSpec(t, diamond))
		inst, _ := s.InstanceCreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "diamond"})
		if err := s.TermBegin(ctx, 3, "m1"); err != nil {
			t.Fatal(err)
		}
		old := s.Term(3)
		var tasks []*model.TaskInstance
		for range 6 {
			tasks = append(tasks, &model.TaskInstance{WorkflowInstanceID: inst.ID, Name: "a", Type: "shell", State: model.TaskSubmitted, Attempt: 1})
		}
		if err := old.TaskInsert(ctx, tasks); err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		if ok, err := old.TaskMarkDispatched(ctx, []model.Dispatch{{ID: tasks[0].ID, Host: "w", Time: now}}); err != nil || !ok[0] {
			t.Fatalf("dispatch in term 3: %v %v", ok, err)
		}
		if err := s.TermBegin(ctx, 4, "m2"); err != nil {
			t.Fatal(err)
		}
		before, _ := s.TaskList(ctx, inst.ID)

		one := []model.Dispatch{{ID: tasks[1].ID, Host: "w", Time: now}}
		var many []model.Dispatch
		for _, tk := range tasks[1:] {
			many = append(many, model.Dispatch{ID: tk.ID, Host: "w", Time: now})
		}
		gone := []model.Dispatch{{ID: tasks[0].ID, Host: "w", Time: now}} // matches no row anyway
		for name, ds := range map[string][]model.Dispatch{"one": one, "many": many, "no longer submitted": gone} {
			if ok, err := old.TaskMarkDispatched(ctx, ds); !errors.Is(err, store.ErrFenced) {
				t.Errorf("stale dispatch (%s): %v %v", name, ok, err)
			}
		}
		ack := model.Report{ID: tasks[0].ID, Kind: model.ReportAck, Host: "w", LogPath: "/l"}
		foreign := model.Report{ID: tasks[0].ID, Kind: model.ReportAck, Host: "other", LogPath: "/l"}
		var acks []model.Report
		for range 5 {
			acks = append(acks, ack)
		}
		for name, rs := range map[string][]model.Report{"one": {ack}, "many": acks, "matching no row": {foreign}} {
			if out, err := old.TaskApplyReports(ctx, rs); !errors.Is(err, store.ErrFenced) {
				t.Errorf("stale reports (%s): %v %v", name, out, err)
			}
		}
		if after, _ := s.TaskList(ctx, inst.ID); !sameTasks(before, after) {
			t.Fatalf("stale writes changed tasks:\n%+v\n%+v", before, after)
		}

		cur := s.Term(4)
		if out, err := cur.TaskApplyReports(ctx, []model.Report{ack, foreign}); err != nil || out[0] != model.ReportApplied || out[1] != model.ReportForeign {
			t.Fatalf("current term's reports: %v %v", out, err)
		}
		if ok, err := cur.TaskMarkDispatched(ctx, many); err != nil || len(ok) != len(many) || !ok[0] || !ok[len(ok)-1] {
			t.Fatalf("current term's dispatch: %v %v", ok, err)
		}
		if ok, err := cur.TaskMarkDispatched(ctx, gone); err != nil || ok[0] {
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
