package worker

import (
	"context"
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/beluga-scheduler/beluga/common/registry"
	"github.com/beluga-scheduler/beluga/internal/procfs"
	"github.com/beluga-scheduler/beluga/remote/message"
)

// fakeStates is a StateWatcher the test drives.
type fakeStates struct {
	mu   sync.Mutex
	subs map[int]chan registry.ConnState
	next int
}

func newFakeStates() *fakeStates { return &fakeStates{subs: map[int]chan registry.ConnState{}} }

func (f *fakeStates) States() (<-chan registry.ConnState, func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan registry.ConnState, 16)
	ch <- registry.Connected
	id := f.next
	f.next++
	f.subs[id] = ch
	return ch, func() {
		f.mu.Lock()
		delete(f.subs, id)
		f.mu.Unlock()
	}
}

func (f *fakeStates) set(s registry.ConnState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, ch := range f.subs {
		ch <- s
	}
}

func startPresence(t *testing.T, w *Worker, reg *registry.Memory, states registry.StateWatcher, o PresenceOptions) *Presence {
	t.Helper()
	p := NewPresence(w, reg, reg, states, o, zaptest.NewLogger(t))
	if err := p.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	return p
}

// node returns the registered worker node at addr.
func node(reg *registry.Memory, addr string) (registry.Node, bool) {
	for _, n := range reg.Nodes(registry.RoleWorker) {
		if n.Addr == addr {
			return n, true
		}
	}
	return registry.Node{}, false
}

func mustNode(t *testing.T, reg *registry.Memory, addr string) registry.Node {
	t.Helper()
	n, ok := node(reg, addr)
	if !ok {
		t.Fatalf("worker %s not registered", addr)
	}
	return n
}

func TestPresenceHeartbeats(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Groups: []string{"etl", "ml"}, Slots: 3})
	reg := registry.NewMemory()
	p := startPresence(t, b.w, reg, reg, PresenceOptions{Interval: 20 * time.Millisecond})
	n := mustNode(t, reg, b.w.Host()) // registered when Start returns
	hb := n.Heartbeat
	if !slices.Equal(n.Groups, []string{"etl", "ml"}) || hb.Capacity != 3 || hb.Running != 0 ||
		!hb.StartTime.Equal(b.w.StartTime()) || hb.Time.Before(hb.StartTime) {
		t.Fatalf("node = %+v, want groups etl ml, capacity 3, the worker's start time", n)
	}
	if hb.Memory <= 0 || hb.Memory > 100 || hb.CPU < 0 || hb.CPU > 100 || hb.Load < 0 {
		t.Fatalf("host load out of range: %+v", hb)
	}
	wait.Until(t, 10*time.Second, "a later heartbeat", func() bool {
		n := mustNode(t, reg, b.w.Host())
		return n.Heartbeat.Time.After(hb.Time) && n.Heartbeat.StartTime.Equal(hb.StartTime)
	})
	b.mustDispatch(t, b.dispatchMsg(1, "sleep 100"))
	wait.Until(t, 10*time.Second, "a heartbeat counting the running task", func() bool {
		return mustNode(t, reg, b.w.Host()).Heartbeat.Running == 1
	})
	b.request(t, message.Kill{TaskInstanceID: 1})
	p.Stop()
	if _, ok := node(reg, b.w.Host()); ok {
		t.Fatal("worker still registered after Stop")
	}
	p.Stop() // twice: harmless
	if err := p.Start(ctxT(t)); err == nil {
		t.Fatal("Start after Stop succeeded")
	}
}

func TestPresenceStartErrors(t *testing.T) {
	t.Parallel()
	reg := registry.NewMemory()
	w, err := New(Config{Listen: "127.0.0.1:0", DataDir: t.TempDir()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	p := NewPresence(w, reg, reg, reg, PresenceOptions{}, nil)
	if err := p.Start(ctxT(t)); err == nil || !strings.Contains(err.Error(), "not started") {
		t.Fatalf("Start with a worker not started = %v", err)
	}
	if err := NewPresence(w, nil, reg, reg, PresenceOptions{}, nil).Start(ctxT(t)); err == nil {
		t.Fatal("Start without a registry succeeded")
	}
	NewPresence(w, reg, reg, reg, PresenceOptions{}, nil).Stop() // before Start: harmless
}

// TestPresenceFollowsLeader: the first master comes from the election, and
// a new leader gets the reports its predecessor did not persist at once,
// not at the next resend tick.
func TestPresenceFollowsLeader(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{ResendInterval: time.Minute})
	second := startMaster(t)
	reg := registry.NewMemory()
	if _, err := reg.Campaign(ctxT(t), b.master.addr()); err != nil {
		t.Fatal(err)
	}
	// A long interval: only registry changes make the presence look.
	startPresence(t, b.w, reg, reg, PresenceOptions{Interval: time.Hour})
	b.master.hold(message.KindResult)
	d := b.dispatchMsg(1, "true")
	d.MasterAddr, d.Epoch = "", 0 // reports go to the master the presence set
	b.mustDispatch(t, d)
	waitReport[message.Result](t, b.master, 1)

	reg.Resign()
	if _, err := reg.Campaign(ctxT(t), second.addr()); err != nil {
		t.Fatal(err)
	}
	// The new master announces itself, as masters do: a registry change.
	if err := reg.Register(ctxT(t), registry.Node{Role: registry.RoleMaster, Addr: second.addr()}); err != nil {
		t.Fatal(err)
	}
	res := waitReport[message.Result](t, second, 1)
	if res.State != "succeeded" {
		t.Fatalf("result at the new leader = %+v", res)
	}
	if n := second.count(1, message.TypeAck) + second.count(1, message.TypeRunning); n != 0 {
		t.Fatalf("the new leader got %d reports the old one had persisted", n)
	}
}

// silentChanges is a registry whose Changes never fire.
type silentChanges struct{ *registry.Memory }

func (silentChanges) Changes() (<-chan struct{}, func()) { return make(chan struct{}), func() {} }

// TestPresenceFollowsLeaderWithoutChanges: a leader change that no
// registry change signals is seen within an Interval.
func TestPresenceFollowsLeaderWithoutChanges(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{ResendInterval: time.Minute})
	second := startMaster(t)
	reg := registry.NewMemory()
	if _, err := reg.Campaign(ctxT(t), b.master.addr()); err != nil {
		t.Fatal(err)
	}
	p := NewPresence(b.w, silentChanges{reg}, reg, reg, PresenceOptions{Interval: 20 * time.Millisecond}, zaptest.NewLogger(t))
	if err := p.Start(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	b.master.hold(message.KindResult)
	b.mustDispatch(t, b.dispatchMsg(1, "true"))
	waitReport[message.Result](t, b.master, 1)
	reg.Resign()
	if _, err := reg.Campaign(ctxT(t), second.addr()); err != nil {
		t.Fatal(err)
	}
	waitReport[message.Result](t, second, 1)
}

// refusedForSession reports whether a dispatch is refused for the
// registry session; an accepted one runs `true`.
func (b *bundle) refusedForSession(t *testing.T, id int64) bool {
	r := b.dispatch(t, b.dispatchMsg(id, "true"))
	return !r.Accepted && strings.Contains(r.Reason, "registry")
}

func TestPresenceExpiredDropsTasks(t *testing.T) {
	t.Parallel()
	// KillGrace beyond the test: the group dies of an immediate SIGKILL.
	b := setup(t, Config{KillGrace: time.Hour})
	reg := registry.NewMemory()
	states := newFakeStates()
	startPresence(t, b.w, reg, states, PresenceOptions{Interval: time.Hour, Settle: 2 * time.Second})
	pgid, pids := b.startGroup(t, b.dispatchMsg(1, "(trap '' TERM; sleep 300) & sleep 300; wait"))
	before := mustNode(t, reg, b.w.Host()).Heartbeat.StartTime

	states.set(registry.Expired)
	wait.Until(t, 10*time.Second, "the task's group to be killed", func() bool { return procfs.Gone(pgid, pids) })
	wait.Until(t, 10*time.Second, "the slot freed", func() bool { return b.w.Stats().Running == 0 })
	if n := b.master.count(1, message.TypeResult); n != 0 {
		t.Fatalf("a dropped task sent %d results", n)
	}
	if !b.refusedForSession(t, 2) {
		t.Fatal("dispatch accepted after the session expired")
	}
	wait.Until(t, 10*time.Second, "registered as a new incarnation", func() bool {
		return mustNode(t, reg, b.w.Host()).Heartbeat.StartTime.After(before)
	})
	states.set(registry.Connected) // the new session
	// It replaced the worker's node; masters fail over what they dispatched
	// here before they saw that, so nothing is taken until they have.
	wait.Until(t, 10*time.Second, "dispatches refused while the new session settles", func() bool {
		r := b.dispatch(t, b.dispatchMsg(3, "true"))
		if r.Accepted {
			t.Fatal("a dispatch was accepted at once in a new session after expiry")
		}
		return strings.Contains(r.Reason, "session is new")
	})
	wait.Until(t, 10*time.Second, "dispatches accepted again", func() bool { return !b.refusedForSession(t, 4) })
	if res := waitReport[message.Result](t, b.master, 4); res.State != "succeeded" {
		t.Fatalf("result after reconnect = %+v", res)
	}
}

// TestPresenceSuspensionKeepsTasks: a suspended connection (ZooKeeper
// restarting, a short cut) refuses new dispatches but leaves running tasks
// alone, however long it lasts short of Expired: a task running through
// the suspension (3 s, past the 2.2 s after which the worker used to drop
// its tasks at the default 5 s session) reports its result, and the
// incarnation stays.
func TestPresenceSuspensionKeepsTasks(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	reg := registry.NewMemory()
	states := newFakeStates()
	startPresence(t, b.w, reg, states, PresenceOptions{Interval: time.Hour})
	start := mustNode(t, reg, b.w.Host()).Heartbeat.StartTime
	b.mustDispatch(t, b.dispatchMsg(1, "sleep 3"))
	waitReport[message.Running](t, b.master, 1)
	states.set(registry.Suspended)
	wait.Until(t, 10*time.Second, "dispatches refused while suspended", func() bool { return b.refusedForSession(t, 2) })
	if res := waitReport[message.Result](t, b.master, 1); res.State != "succeeded" {
		t.Fatalf("result of the task that ran through the suspension = %+v", res)
	}
	if n := mustNode(t, reg, b.w.Host()).Heartbeat.StartTime; !n.Equal(start) {
		t.Fatal("a suspension changed the incarnation")
	}
	states.set(registry.Reconnected)
	wait.Until(t, 10*time.Second, "dispatches accepted again", func() bool { return !b.refusedForSession(t, 3) })
}

// TestPresenceDeregistersOnStop follows the documented order (worker, then
// presence): the node is gone and stays gone.
func TestPresenceDeregistersOnStop(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	reg := registry.NewMemory()
	p := NewPresence(b.w, reg, reg, reg, PresenceOptions{Interval: 10 * time.Millisecond}, zaptest.NewLogger(t))
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	b.w.Stop()
	p.Stop()
	// No heartbeat registers it again after Deregister.
	deadline := time.Now().Add(50 * time.Millisecond) // five intervals
	for time.Now().Before(deadline) {
		if _, ok := node(reg, b.w.Host()); ok {
			t.Fatal("worker registered after Stop")
		}
		time.Sleep(5 * time.Millisecond) // time is the subject: nothing may happen for five intervals
	}
}

// TestPresenceReportsOverload: with MaxMemoryPercent 90, heartbeats mark
// the worker overloaded once the host's memory use reaches 90 %, keep it so
// at 85 % (inside the 10-point band), and clear it at 75 %. The host
// figures come from a /proc of the test's.
func TestPresenceReportsOverload(t *testing.T) {
	t.Parallel()
	proc := t.TempDir()
	use := func(percent int) {
		t.Helper()
		meminfo := fmt.Sprintf("MemTotal: 1000000 kB\nMemFree: 0 kB\nMemAvailable: %d kB\n", (100-percent)*10000)
		for name, data := range map[string]string{"stat": "cpu  1 0 0 1 0 0 0 0 0 0\n", "loadavg": "0.10 0.10 0.10 1/1 1\n", "meminfo": meminfo} {
			if err := os.WriteFile(filepath.Join(proc, name+".tmp"), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(filepath.Join(proc, name+".tmp"), filepath.Join(proc, name)); err != nil {
				t.Fatal(err)
			}
		}
	}
	use(50)
	b := setup(t, Config{MaxMemoryPercent: 90})
	reg := registry.NewMemory()
	startPresence(t, b.w, reg, reg, PresenceOptions{Interval: 20 * time.Millisecond, ProcDir: proc})
	heartbeat := func(memory float64) registry.Heartbeat {
		t.Helper()
		var hb registry.Heartbeat
		wait.Until(t, 10*time.Second, fmt.Sprintf("a heartbeat at %.0f %% memory", memory), func() bool {
			hb = mustNode(t, reg, b.w.Host()).Heartbeat
			return hb.Memory == memory
		})
		return hb
	}
	if hb := heartbeat(50); hb.Overloaded {
		t.Fatalf("overloaded at 50 %%: %+v", hb)
	}
	use(90)
	if hb := heartbeat(90); !hb.Overloaded || !strings.Contains(hb.OverloadReason, "memory 90% >= max 90%") {
		t.Fatalf("at 90 %%: %+v, want overloaded naming memory", hb)
	}
	use(85)
	if hb := heartbeat(85); !hb.Overloaded {
		t.Fatalf("at 85 %% after 90 %%: %+v, want still overloaded (leaves below 80 %%)", hb)
	}
	use(75)
	if hb := heartbeat(75); hb.Overloaded || hb.OverloadReason != "" {
		t.Fatalf("at 75 %%: %+v, want no longer overloaded", hb)
	}
}

func TestOverloadSettingsChecked(t *testing.T) {
	t.Parallel()
	for _, cfg := range []Config{{Listen: "127.0.0.1:0", MaxCPUPercent: -1}, {Listen: "127.0.0.1:0", MaxMemoryPercent: 101}} {
		if _, err := New(cfg, nil); err == nil || !strings.Contains(err.Error(), "want 0 (off) to 100") {
			t.Errorf("New(%+v) = %v, want a range error", cfg, err)
		}
	}
}
