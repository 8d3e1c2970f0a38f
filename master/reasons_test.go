package master

import (
	"context"
	"testing"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/registry"
	"github.com/beluga-scheduler/beluga/common/store"
)

// A dispatch round whose tasks of many instances all wait for a full
// worker records their reasons in one transaction (it was one each, and
// one more each to clear it: two commits per task of 1,000 concurrent
// runs), and each instance shows its reason.
func TestWaitReasonsInOneTransaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st := oneTaskStore(t, zap.NewNop())
	const n = 20
	for range n {
		if _, err := st.InstanceCreateRun(ctx, store.RunRequest{Project: "p", Workflow: "w"}); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.TermBegin(ctx, 1, "m"); err != nil {
		t.Fatal(err)
	}
	term := st.Term(1)
	insts, err := term.InstanceClaimCommands(ctx, "m", 1, n)
	if err != nil || len(insts) != n {
		t.Fatalf("claim: %d %v", len(insts), err)
	}
	reg := registry.NewMemory()
	reg.Register(ctx, registry.Node{Addr: "w1", Role: registry.RoleWorker, Groups: []string{"default"},
		Heartbeat: registry.Heartbeat{Capacity: 1}})
	d := newDispatcher(zap.NewNop(), term, reg, nil)
	for i := range queueFactor { // the worker is full
		d.places.take(int64(-1-i), "w1", "")
	}
	for i, in := range insts {
		d.queue.Push(&taskItem{WorkflowInstanceID: in.ID, TaskInstanceID: int64(1000 + i), Group: "default"})
	}
	cctx, counts := store.CountReads(ctx)
	d.dispatchSome(cctx)
	if got := counts.Transactions.Load(); got != 1 {
		t.Fatalf("a round of %d waiting instances opened %d transactions, want 1", n, got)
	}
	for _, in := range insts {
		got, err := st.InstanceGet(ctx, in.ID)
		if err != nil || got.Reason == "" {
			t.Fatalf("instance %d: reason %q %v", in.ID, got.Reason, err)
		}
		if cause, _, ok := model.ParseDispatchWait(got.Reason); !ok || cause != model.WaitWorkersBusy {
			t.Fatalf("instance %d: reason %q, want workers busy", in.ID, got.Reason)
		}
	}
}
