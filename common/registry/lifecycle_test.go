package registry

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/internal/startstop"
)

// TestZKLifecycleContract: a second Start is ErrStarted, Stop before Start
// and twice is safe, and Stop returns only once the session loop and the
// term watcher exited (the term is lost, the loop done).
func TestZKLifecycleContract(t *testing.T) {
	srv := sharedZK(t)
	root := testRoot()

	z := newZK(t, srv.Addr(), root, 4*time.Second)
	z.Stop()
	z.Stop()
	if err := z.Start(context.Background()); !errors.Is(err, ErrStopped) {
		t.Fatalf("Start after Stop = %v, want ErrStopped", err)
	}
	if err := z.Register(context.Background(), worker("w:1", 0)); !errors.Is(err, ErrStopped) {
		t.Fatalf("Register after Stop = %v, want ErrStopped", err)
	}

	z = newZK(t, srv.Addr(), root, 4*time.Second)
	start(t, z)
	if err := z.Start(context.Background()); !errors.Is(err, startstop.ErrStarted) {
		t.Fatalf("second Start = %v, want startstop.ErrStarted", err)
	}
	term, err := z.Campaign(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	z.Stop()
	for what, ch := range map[string]<-chan struct{}{"term watcher (Lost)": term.Lost, "session loop": z.loopDone} {
		select {
		case <-ch:
		default:
			t.Fatalf("Stop returned before the %s ended", what)
		}
	}
	z.Stop()
	if err := z.Start(context.Background()); !errors.Is(err, ErrStopped) {
		t.Fatalf("Start after Stop = %v, want ErrStopped", err)
	}
}
