package guard

import (
	"context"
	"errors"
	"syscall"
	"testing"

	"go.uber.org/zap/zaptest"

	"github.com/beluga-scheduler/beluga/internal/startstop"
)

// TestLifecycleContract: a second Start is ErrStarted, Stop before Start
// and twice is safe, and Stop returns only once the watcher goroutine
// returned and the guard process was reaped.
func TestLifecycleContract(t *testing.T) {
	g := New(1, zaptest.NewLogger(t))
	g.Stop()
	g.Stop()
	if err := g.Start(context.Background()); !errors.Is(err, startstop.ErrStopped) {
		t.Fatalf("Start after Stop = %v, want startstop.ErrStopped", err)
	}

	g = New(1, zaptest.NewLogger(t))
	if err := g.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := g.Start(context.Background()); !errors.Is(err, startstop.ErrStarted) {
		g.Stop()
		t.Fatalf("second Start = %v, want startstop.ErrStarted", err)
	}
	g.mu.Lock()
	pid := g.proc.Pid
	g.mu.Unlock()
	g.Stop()
	select {
	case <-g.done:
	default:
		t.Fatal("Stop returned before the watcher goroutine")
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Fatalf("guard process %d after Stop: kill 0 = %v, want ESRCH (reaped)", pid, err)
	}
	g.Stop()
	if err := g.Start(context.Background()); !errors.Is(err, startstop.ErrStopped) {
		t.Fatalf("Start after Stop = %v, want startstop.ErrStopped", err)
	}
}
