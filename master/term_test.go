package master_test

import (
	"context"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/beluga-scheduler/beluga/common/registry"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/master"
)

// scriptedElector hands out the terms a test gives it, one per Campaign,
// and counts the campaigns.
type scriptedElector struct {
	terms chan registry.Term
	calls atomic.Int32
}

func (e *scriptedElector) Campaign(ctx context.Context, _ string) (registry.Term, error) {
	e.calls.Add(1)
	select {
	case t := <-e.terms:
		return t, nil
	case <-ctx.Done():
		return registry.Term{}, ctx.Err()
	}
}

func (e *scriptedElector) Resign()                {}
func (e *scriptedElector) Leader() (string, bool) { return "", false }

func openStore(t *testing.T, log *zap.Logger) *store.Store {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "b.db"), log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestStaleElectionStandsBy: a master whose election's epoch is not above
// the recorded term (another master was elected since) records nothing,
// never leads, and campaigns again.
func TestStaleElectionStandsBy(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log := zaptest.NewLogger(t, zaptest.Level(zap.ErrorLevel))
	st := openStore(t, log)
	if err := st.TermBegin(ctx, 5, "newer"); err != nil {
		t.Fatal(err)
	}
	el := &scriptedElector{terms: make(chan registry.Term, 1)}
	el.terms <- registry.Term{Epoch: 3, Lost: make(chan struct{})}
	m := master.New(master.Config{Listen: "127.0.0.1:0"}, st, registry.NewMemory(), el, log)
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	wait.Until(t, 30*time.Second, "the master to campaign again after its stale election", func() bool {
		return el.calls.Load() >= 2 || m.IsLeader()
	})
	if m.IsLeader() {
		t.Fatalf("the master leads in epoch %d with a stale election of epoch 3", m.Epoch())
	}
	if ti, err := st.TermCurrentInfo(ctx); err != nil || ti.Epoch != 5 || ti.Host != "newer" {
		t.Fatalf("fence: %+v %v; want epoch 5 of newer", ti, err)
	}
}

// TestLeadershipLostDuringFenceWrite: while the fence write fails and is
// retried (the DB is unreachable), the election is lost. The term ends at
// once: the master stops retrying and campaigns again.
func TestLeadershipLostDuringFenceWrite(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	log := zaptest.NewLogger(t, zaptest.Level(zap.ErrorLevel+1))
	st := openStore(t, log)
	st.Close() // every write fails from now on
	el := &scriptedElector{terms: make(chan registry.Term, 1)}
	lost := make(chan struct{})
	el.terms <- registry.Term{Epoch: 1, Lost: lost}
	m := master.New(master.Config{Listen: "127.0.0.1:0"}, st, registry.NewMemory(), el, log)
	if err := m.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer m.Stop()
	wait.Until(t, 30*time.Second, "the master to take its term", func() bool { return len(el.terms) == 0 })
	close(lost)
	start := time.Now()
	wait.Until(t, 30*time.Second, "the master to give up the lost term and campaign again", func() bool { return el.calls.Load() >= 2 })
	t.Logf("campaigning again %v after the loss", time.Since(start).Round(time.Millisecond))
	if m.IsLeader() {
		t.Fatal("the master leads without a recorded term")
	}
}
