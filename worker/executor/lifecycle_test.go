package executor

import (
	"context"
	"errors"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/beluga-scheduler/beluga/internal/startstop"
	"github.com/beluga-scheduler/beluga/remote/message"
)

// blockingSender holds every report until its ctx ends, so the sender
// goroutine is mid-Send when Stop comes; exited counts the Sends that
// returned.
type blockingSender struct {
	in     chan struct{} // closed at the first Send
	once   sync.Once
	exited atomic.Int32
}

func (s *blockingSender) Send(ctx context.Context, _ string, _ message.Message) error {
	s.once.Do(func() { close(s.in) })
	<-ctx.Done()
	s.exited.Add(1)
	return ctx.Err()
}

// TestLifecycleContract: Start once (a second Start is ErrStarted), Stop
// before Start and twice is safe, and Stop returns only once the executor's
// goroutines (here the sender, blocked in a Send) have exited.
func TestLifecycleContract(t *testing.T) {
	newExec := func(s Sender) *Executor {
		e, err := New(Config{Host: "w", DataDir: t.TempDir(), Slots: 1, KillGrace: 200 * time.Millisecond}, s, zaptest.NewLogger(t))
		if err != nil {
			t.Fatal(err)
		}
		return e
	}

	e := newExec(&fakeMaster{})
	e.Stop()
	e.Stop()
	if err := e.Start(context.Background()); !errors.Is(err, ErrStopped) {
		t.Fatalf("Start after Stop = %v, want ErrStopped", err)
	}

	s := &blockingSender{in: make(chan struct{})}
	e = newExec(s)
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(context.Background()); !errors.Is(err, startstop.ErrStarted) {
		t.Fatalf("second Start = %v, want startstop.ErrStarted", err)
	}
	if r := e.Dispatch(dispatch(1, "true")); !r.Accepted {
		t.Fatalf("dispatch refused: %+v", r)
	}
	wait.Signal(t, 10*time.Second, "the ack to be sent", s.in)
	e.Stop()
	if s.exited.Load() != 1 {
		t.Fatal("Stop returned while the sender goroutine was still in Send")
	}
	e.Stop()
	if err := e.Start(context.Background()); !errors.Is(err, ErrStopped) {
		t.Fatalf("Start after Stop = %v, want ErrStopped", err)
	}
}
