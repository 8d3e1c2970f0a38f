package subworkflow

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/tasktype"
	"github.com/beluga-scheduler/beluga/testkit/hosttest"
	"github.com/beluga-scheduler/beluga/testkit/leakcheck"
)

func TestMain(m *testing.M) { os.Exit(leakcheck.Run(m)) }

func TestContinue(t *testing.T) {
	for _, c := range []struct {
		child model.WorkflowState
		rerun bool
		want  string
	}{
		{model.WorkflowRunning, false, ""},
		{model.WorkflowSucceeded, false, ""}, // it counts: the attempt ends succeeded
		{model.WorkflowFailed, false, "recover_failed"},
		{model.WorkflowStopped, false, "resume"},
		{model.WorkflowPaused, false, "resume"},
		{model.WorkflowSucceeded, true, "rerun"},
		{model.WorkflowFailed, true, "rerun"},
		{model.WorkflowRunning, true, ""},
	} {
		if got := Continue(c.child, c.rerun); got != c.want {
			t.Errorf("child %s, rerun %v: %q, want %q", c.child, c.rerun, got, c.want)
		}
	}
}

func TestTaskState(t *testing.T) {
	for child, want := range map[model.WorkflowState]model.TaskState{
		model.WorkflowSucceeded: model.TaskSucceeded, model.WorkflowFailed: model.TaskFailed,
		model.WorkflowStopped: model.TaskKilled, model.WorkflowPaused: model.TaskPaused,
	} {
		if got, ok := TaskState(child); !ok || got != want {
			t.Errorf("%s: %s %v", child, got, ok)
		}
	}
	for _, s := range []model.WorkflowState{model.WorkflowRunning, model.WorkflowSubmitted, model.WorkflowReadyPause} {
		if _, ok := TaskState(s); ok {
			t.Errorf("%s ended the parent task", s)
		}
	}
}

func TestCheckAndParams(t *testing.T) {
	for ref, bad := range map[string]bool{"load": false, "crm/load": false, "": true, "/load": true, "a/b/c": true, "crm/": true} {
		if got := len(check(&Spec{Workflow: ref})) > 0; got != bad {
			t.Errorf("workflow %q: refused %v", ref, got)
		}
	}
	if len(check(&Spec{Workflow: "x", Version: -1})) == 0 {
		t.Error("a negative version passed")
	}
	got, err := ChildParams(map[string]string{"day": "${bizdate}", "k": "v"}, map[string]string{"bizdate": "20261201"})
	if err != nil || got["day"] != "20261201" || got["k"] != "v" {
		t.Fatalf("child params %v %v", got, err)
	}
	if _, err := ChildParams(map[string]string{"day": "${nope}"}, nil); err == nil {
		t.Fatal("an unknown param gave no error")
	}
}

// The type's master face hands its attempts to the leader's Child service.
func TestMasterFaceChild(t *testing.T) {
	var h hosttest.Host
	Type.Start(context.Background(), &h, hosttest.Attempt(7))
	Type.Cancel(context.Background(), &h, hosttest.Attempt(7), tasktype.CancelPause)
	if want := []string{"StartChild(7)", "CancelChild(7, pause)"}; !slices.Equal(h.Calls, want) {
		t.Fatalf("calls %q, want %q", h.Calls, want)
	}
}
