package store_test

import (
	"context"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// TestTaskHistory: the succeeded attempts of the last runs of a workflow
// before an instance, newest first; not the failed ones, not the runs
// after it, not dry runs; and InstanceTasksNow's latest attempt by task.
func TestTaskHistory(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		base := time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC)
		at := func(d time.Duration) *time.Time { v := base.Add(d); return &v }
		var runs []model.WorkflowInstance
		for i := range 4 {
			inst := newInstance(t, s, model.WorkflowSucceeded)
			runs = append(runs, inst)
			d := time.Duration(i+1) * time.Second
			ok := &model.TaskInstance{WorkflowInstanceID: inst.ID, Name: "a", Type: "shell", State: model.TaskSucceeded, Attempt: 1,
				WorkerGroup: "g", SubmitTime: at(0), DispatchTime: at(time.Second), StartTime: at(2 * time.Second), EndTime: at(2*time.Second + d)}
			// a master-run task: no submit or dispatch time, no queueing
			logic := &model.TaskInstance{WorkflowInstanceID: inst.ID, Name: "l", Type: "shell", State: model.TaskSucceeded, Attempt: 1,
				StartTime: at(0), EndTime: at(1500 * time.Millisecond)}
			bad := &model.TaskInstance{WorkflowInstanceID: inst.ID, Name: "b", Type: "shell", State: model.TaskFailed, Attempt: 1,
				StartTime: at(0), EndTime: at(time.Hour)}
			if err := s.TaskInsert(ctx, []*model.TaskInstance{ok, logic, bad}); err != nil {
				t.Fatal(err)
			}
		}
		dry, err := s.InstanceCreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "diamond", DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.TaskInsert(ctx, []*model.TaskInstance{{WorkflowInstanceID: dry.ID, Name: "a", Type: "shell",
			State: model.TaskSucceeded, Attempt: 1, StartTime: at(0), EndTime: at(0)}}); err != nil {
			t.Fatal(err)
		}
		now := newInstance(t, s, model.WorkflowRunning)
		got, err := s.TaskHistory(ctx, "demo", "diamond", now.ID, 3)
		if err != nil {
			t.Fatal(err)
		}
		// the last 3 runs before now (the dry run left out): 4s, 3s, 2s
		// of a, newest first, each with l's 1.5s and no queueing
		if len(got) != 6 {
			t.Fatalf("history %+v, want 6 samples", got)
		}
		var as []model.TaskSample
		for _, g := range got {
			if g.Name == "l" {
				if g.Run != 1500*time.Millisecond || g.HasQueue {
					t.Errorf("sample of l: %+v", g)
				}
				continue
			}
			as = append(as, g)
		}
		for i, want := range []time.Duration{4 * time.Second, 3 * time.Second, 2 * time.Second} {
			g := as[i]
			if g.Name != "a" || g.WorkerGroup != "g" || g.InstanceID != runs[3-i].ID || g.Run != want ||
				!g.HasQueue || g.Queue != time.Second {
				t.Errorf("sample %d: %+v, want a of run %d taking %v", i, g, runs[3-i].ID, want)
			}
		}
		if got, err := s.TaskHistory(ctx, "demo", "diamond", runs[1].ID, 20); err != nil || len(got) != 2 || got[0].InstanceID != runs[0].ID {
			t.Errorf("history before run 2: %+v %v", got, err)
		}
		if got, err := s.TaskHistory(ctx, "demo", "other", now.ID, 20); err != nil || len(got) != 0 {
			t.Errorf("history of another workflow: %+v %v", got, err)
		}

		first := &model.TaskInstance{WorkflowInstanceID: now.ID, Name: "a", Type: "shell", State: model.TaskFailed, Attempt: 1, StartTime: at(0)}
		retry := &model.TaskInstance{WorkflowInstanceID: now.ID, Name: "a", Type: "shell", State: model.TaskRunning, Attempt: 2,
			WorkerGroup: "g", StartTime: at(time.Minute)}
		waiting := &model.TaskInstance{WorkflowInstanceID: now.ID, Name: "b", Type: "shell", State: model.TaskSubmitted, Attempt: 1}
		if err := s.TaskInsert(ctx, []*model.TaskInstance{first, retry, waiting}); err != nil {
			t.Fatal(err)
		}
		tasks, err := s.InstanceTasksNow(ctx, now.ID)
		if err != nil {
			t.Fatal(err)
		}
		byName := map[string]model.TaskNow{}
		for _, tk := range tasks {
			byName[tk.Name] = tk
		}
		if a := byName["a"]; len(tasks) != 2 || a.Attempt != 2 || a.State != model.TaskRunning || a.WorkerGroup != "g" ||
			a.StartTime == nil || !a.StartTime.Equal(*at(time.Minute)) {
			t.Errorf("tasks now %+v", tasks)
		}
		if b := byName["b"]; b.State != model.TaskSubmitted || b.StartTime != nil {
			t.Errorf("b now %+v", b)
		}
	})
}
