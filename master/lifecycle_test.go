package master_test

import (
	"errors"
	"testing"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/internal/startstop"
	"github.com/beluga-scheduler/beluga/master"
)

// TestMasterStartTwice: a second Start is refused; it does not start a
// second transport and campaign beside the first.
func TestMasterStartTwice(t *testing.T) {
	t.Parallel()
	c := newCell(t, master.Config{})
	if err := c.m.Start(c.ctx); !errors.Is(err, startstop.ErrStarted) {
		t.Fatalf("second Start = %v, want ErrStarted", err)
	}
	if !c.m.IsLeader() {
		t.Fatal("the first start no longer leads after a second Start")
	}
	c.m.Stop()
	c.m.Stop()
	if err := c.m.Start(c.ctx); !errors.Is(err, startstop.ErrStopped) {
		t.Fatalf("Start after Stop = %v, want ErrStopped", err)
	}
}

// TestMasterStopBeforeStart: Stop on a master that never started returns.
func TestMasterStopBeforeStart(t *testing.T) {
	t.Parallel()
	m := master.New[*store.Store](master.Config{Listen: "127.0.0.1:0"}, nil, nil, nil, zap.NewNop())
	m.Stop()
}
