package master

import (
	"context"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/remote/message"
	"github.com/beluga-scheduler/beluga/testkit/mariadbtest"
)

type nopPeer struct{}

func (nopPeer) Send(uint64, message.Message) error { return nil }
func (nopPeer) RemoteAddr() string                 { return "test" }

// TestEventsStopBoundedByHungStore: the task event service holds a batch
// whose write hangs (its MariaDB is SIGSTOPped); Stop still returns, within
// the persist timeout, and the batch is left for the workers to re-send.
func TestEventsStopBoundedByHungStore(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a private MariaDB")
	}
	ctx := context.Background()
	log := zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel))
	db := mariadbtest.Start(t)
	st, err := store.Open(ctx, db.URL(t), log)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	e := newEventService(log, st, func(int64, taskEvent) {}, func(int64, taskEvent) {})
	if err := db.Pause(); err != nil {
		t.Fatal(err)
	}
	defer db.Resume() //nolint:errcheck // Stop (SIGKILL) follows in cleanup anyway
	e.Handle(nopPeer{}, message.Ack{TaskInstanceID: 1, WorkflowInstanceID: 1, Host: "w:1"})
	if err := e.Start(ctx); err != nil {
		t.Fatal(err)
	}
	// The loop drains the inbox and goes straight into the write.
	wait.Until(t, 10*time.Second, "the event service to take its report", func() bool {
		e.inbox.mu.Lock()
		defer e.inbox.mu.Unlock()
		return len(e.inbox.items) == 0
	})
	stopped := make(chan struct{})
	began := time.Now()
	go func() {
		defer close(stopped)
		e.Stop()
	}()
	bound := persistTimeout + 5*time.Second
	select {
	case <-stopped:
		t.Logf("Stop returned after %s with the DB paused", time.Since(began).Round(time.Millisecond))
	case <-time.After(bound):
		db.Resume() //nolint:errcheck // let the write and Stop finish before failing
		<-stopped
		t.Fatalf("Stop did not return within %s while the DB hung", bound)
	}
}
