package master_test

import (
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/master"
)

// TestRefusedDispatchWedgesNothing: a run whose param holds a NUL byte
// (written past the API's checks) is dispatched beside six 4-task runs on one
// worker. The worker refuses that one dispatch; the task fails with the
// worker's reason (and is retried, as any failure) and every other run still
// finishes. Before, the master closed the connection the other dispatches
// shared, the worker dropped those it had acked, and refused them for good.
func TestRefusedDispatchWedgesNothing(t *testing.T) {
	t.Parallel()
	c := newCell(t, master.Config{})
	c.addWorker(4)
	c.apply("name: bad\ntasks:\n  - {name: only, command: 'echo \"$P\"', retries: 1}\n")
	var b strings.Builder
	b.WriteString("name: good\ntasks:\n")
	for i := 0; i < 4; i++ {
		fmt.Fprintf(&b, "  - {name: t%d, command: \"sleep 0.05\"}\n", i)
	}
	c.apply(b.String())
	var good []model.WorkflowInstance
	for i := 0; i < 3; i++ {
		good = append(good, c.run("good", model.PriorityMedium))
	}
	prio := model.PriorityHigh
	bad, err := c.st.InstanceCreateRun(c.ctx, store.RunRequest{Project: "p", Workflow: "bad", Priority: &prio,
		Params: map[string]string{"P": "x\x00y"}, CommandType: model.CommandStart})
	if err != nil {
		t.Fatal(err)
	}
	c.m.Notify()
	for i := 0; i < 3; i++ {
		good = append(good, c.run("good", model.PriorityMedium))
	}
	for _, inst := range append([]model.WorkflowInstance{bad}, good...) {
		wait.UntilErr(t, 30*time.Second, fmt.Sprintf("instance %d (%s) to finish", inst.ID, inst.Workflow), func() error {
			if got := c.instance(inst.ID); !got.State.Finished() {
				return fmt.Errorf("still %s; tasks %+v", got.State, c.tasks(inst.ID))
			}
			return nil
		})
	}
	for _, inst := range good {
		if got := c.instance(inst.ID); got.State != model.WorkflowSucceeded {
			t.Fatalf("good run %d: %s, tasks %+v", inst.ID, got.State, c.tasks(inst.ID))
		}
	}
	got := c.instance(bad.ID)
	if got.State != model.WorkflowFailed {
		t.Fatalf("bad run: %s, want failed", got.State)
	}
	tasks := c.tasks(bad.ID)
	// A task failure like any other: its retry ran (and was refused too).
	if len(tasks) != 2 || tasks[0].State != model.TaskFailed || tasks[1].State != model.TaskFailed || tasks[1].Attempt != 2 {
		t.Fatalf("bad run's tasks: %+v, want attempts 1 and 2 failed", tasks)
	}
	if !strings.Contains(got.Reason, "NUL") {
		t.Fatalf("bad run's reason %q does not give the worker's refusal", got.Reason)
	}
}
