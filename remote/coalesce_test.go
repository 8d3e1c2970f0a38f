package remote

import (
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/remote/message"
)

// Frames from many goroutines, far more than one connection may queue
// (maxOut), all arrive whole, and each sender's in the order it sent them:
// senders past the cap wait for a flush instead of growing the queue.
func TestQueuedFramesPastTheCapArriveInOrder(t *testing.T) {
	t.Parallel()
	const senders, each = 4, 12
	big := strings.Repeat("x", 512<<10) // 4*12 frames of 512 KiB: 24 MiB, six times maxOut
	var mu sync.Mutex
	last := map[int64]int{} // sender -> last index seen
	total := 0
	bad := ""
	s := startServer(t, "127.0.0.1:0", func(_ Peer, _ uint64, m message.Message) {
		d, ok := m.(message.Dispatch)
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		total++
		from, i := d.WorkflowInstanceID, int(d.TaskInstanceID)
		if prev, seen := last[from]; (seen && i != prev+1) || (!seen && i != 0) || d.Command != big {
			bad = "frame out of order or cut"
		}
		last[from] = i
	}, Options{})
	c := startClient(t, nil, Options{})
	ctx := ctxT(t)
	var wg sync.WaitGroup
	for g := range int64(senders) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range int64(each) {
				if err := c.Send(ctx, s.Addr(), message.Dispatch{TaskInstanceID: i, WorkflowInstanceID: g, Command: big}); err != nil {
					t.Errorf("send %d/%d: %v", g, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	wait.Until(t, 10*time.Second, "every frame", func() bool { mu.Lock(); defer mu.Unlock(); return total == senders*each || bad != "" })
	mu.Lock()
	defer mu.Unlock()
	if bad != "" {
		t.Fatal(bad)
	}
}
