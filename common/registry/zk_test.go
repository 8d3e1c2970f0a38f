package registry

import (
	"context"
	"errors"
	"fmt"
	testwait "github.com/beluga-scheduler/beluga/testkit/wait"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/beluga-scheduler/beluga/common/metrics"
	"github.com/beluga-scheduler/beluga/testkit/leakcheck"
	"github.com/beluga-scheduler/beluga/testkit/zktest"
)

var _ interface {
	Registry
	Elector
	StateWatcher
} = (*ZK)(nil)

// One ZooKeeper for the tests that do not restart or pause it; each test
// works under its own root.
var (
	sharedOnce sync.Once
	shared     *zktest.Server
	sharedErr  error
	sharedDir  string
	rootSeq    atomic.Int64
)

func TestMain(m *testing.M) {
	os.Exit(leakcheck.Run(m, func() {
		if shared != nil {
			shared.Stop()
		}
		if sharedDir != "" {
			os.RemoveAll(sharedDir)
		}
	}))
}

func sharedZK(t *testing.T) *zktest.Server {
	t.Helper()
	sharedOnce.Do(func() {
		if _, err := os.Stat(zktest.Jar); err != nil {
			sharedErr = fmt.Errorf("%s not found: install Debian's zookeeper package (scripts/deps.sh)", zktest.Jar)
			return
		}
		sharedDir, sharedErr = os.MkdirTemp("", "beluga-zk-")
		if sharedErr == nil {
			shared, sharedErr = zktest.StartProcess(sharedDir)
		}
	})
	if sharedErr != nil {
		t.Fatalf("shared zookeeper: %v", sharedErr)
	}
	return shared
}

// newZK makes a registry on servers under root, stopped when the test ends.
func newZK(t *testing.T, servers, root string, timeout time.Duration) *ZK {
	t.Helper()
	z := NewZK(ZKConfig{Servers: []string{servers}, Root: root, SessionTimeout: timeout},
		zaptest.NewLogger(t, zaptest.Level(zap.InfoLevel)))
	t.Cleanup(z.Stop)
	return z
}

func testRoot() string { return fmt.Sprintf("/beluga-test/r%d", rootSeq.Add(1)) }

func start(t *testing.T, z *ZK) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := z.Start(ctx); err != nil {
		t.Fatalf("start: %v", err)
	}
}

func hasNode(r Registry, role Role, addr string) bool {
	_, ok := findNode(r, role, addr)
	return ok
}

func findNode(r Registry, role Role, addr string) (Node, bool) {
	for _, n := range r.Nodes(role) {
		if n.Addr == addr {
			return n, true
		}
	}
	return Node{}, false
}

// stateLog records a registry's connection states.
type stateLog struct {
	mu     sync.Mutex
	states []ConnState
	cancel func()
	done   chan struct{}
}

func watchStates(t *testing.T, w StateWatcher) *stateLog {
	ch, cancel := w.States()
	l := &stateLog{cancel: cancel, done: make(chan struct{})}
	stop := make(chan struct{})
	go func() {
		defer close(l.done)
		for {
			select {
			case s := <-ch:
				l.mu.Lock()
				l.states = append(l.states, s)
				l.mu.Unlock()
			case <-stop:
				return
			}
		}
	}()
	t.Cleanup(func() { cancel(); close(stop); <-l.done })
	return l
}

func (l *stateLog) seen() []ConnState {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]ConnState(nil), l.states...)
}

// waitSeq waits until the states seen since index from contain want in
// order.
func (l *stateLog) waitSeq(t *testing.T, within time.Duration, from int, want ...ConnState) {
	t.Helper()
	testwait.Until(t, within, fmt.Sprintf("states %v after #%d, want %v in order", l.seen(), from, want), func() bool {
		s := l.seen()
		i := 0
		for _, st := range s[min(from, len(s)):] {
			if i < len(want) && st == want[i] {
				i++
			}
		}
		return i == len(want)
	})
}

func worker(addr string, running int) Node {
	now := time.Now().UTC().Truncate(time.Millisecond)
	return Node{Role: RoleWorker, Addr: addr, Groups: []string{"default", "gpu"},
		Heartbeat: Heartbeat{Running: running, Capacity: 8, StartTime: now, Time: now}}
}

func TestZKConfigErrors(t *testing.T) {
	for _, tc := range []struct {
		cfg  ZKConfig
		want string
	}{
		{ZKConfig{}, "no zookeeper servers"},
		{ZKConfig{Servers: []string{"nohostport"}}, "want host:port"},
		{ZKConfig{Servers: []string{"h:99999"}}, "bad port"},
		{ZKConfig{Servers: []string{"h:1"}, Root: "beluga"}, "must start with /"},
		{ZKConfig{Servers: []string{"h:1"}, Root: "/zookeeper/x"}, "reserved"},
	} {
		z := NewZK(tc.cfg, zap.NewNop())
		err := z.Start(context.Background())
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: Start = %v, want an error containing %q", tc.cfg, err, tc.want)
		}
		z.Stop()
		z.Stop()
	}
	z := NewZK(ZKConfig{Servers: []string{"127.0.0.1:1"}}, zap.NewNop())
	z.Stop() // before Start
	if err := z.Start(context.Background()); !errors.Is(err, ErrStopped) {
		t.Fatalf("Start after Stop = %v, want ErrStopped", err)
	}
}

func TestZKRegisterWatchLeave(t *testing.T) {
	srv := sharedZK(t)
	root := testRoot()
	a := newZK(t, srv.Addr(), root, 4*time.Second)
	b := newZK(t, srv.Addr(), root, 4*time.Second)
	ctx := context.Background()

	// A registration made before Start is written by Start.
	pre := make(chan error, 1)
	go func() { pre <- a.Register(ctx, Node{Role: RoleMaster, Addr: "10.0.0.1:5678"}) }()
	start(t, a)
	if err := <-pre; err != nil {
		t.Fatal(err)
	}
	start(t, b)
	changes, cancel := b.Changes()
	defer cancel()

	if err := a.Register(ctx, worker("10.0.0.2:1234", 0)); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 5*time.Second, "b sees the master and the worker", func() bool {
		return hasNode(b, RoleMaster, "10.0.0.1:5678") && hasNode(b, RoleWorker, "10.0.0.2:1234")
	})
	if n, _ := findNode(b, RoleWorker, "10.0.0.2:1234"); !n.InGroup("gpu") || n.Heartbeat.Capacity != 8 {
		t.Fatalf("worker as seen by b: %+v", n)
	}
	testwait.Signal(t, 5*time.Second, "Changes to fire on a join", changes)

	// A heartbeat is a new Register; watchers see it.
	if err := a.Register(ctx, worker("10.0.0.2:1234", 3)); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 5*time.Second, "b sees the heartbeat", func() bool {
		n, _ := findNode(b, RoleWorker, "10.0.0.2:1234")
		return n.Heartbeat.Running == 3
	})

	if err := a.Deregister(ctx, RoleWorker, "10.0.0.2:1234"); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 5*time.Second, "b sees the worker leave", func() bool {
		return !hasNode(b, RoleWorker, "10.0.0.2:1234")
	})
	if !hasNode(a, RoleMaster, "10.0.0.1:5678") {
		t.Fatal("a lost its own master registration")
	}

	for _, bad := range []Node{{Role: "boss", Addr: "x:1"}, {Role: RoleWorker, Addr: "a/b:1"}, {Role: RoleWorker}} {
		if err := a.Register(ctx, bad); err == nil {
			t.Errorf("Register(%+v) accepted", bad)
		}
	}
}

func TestZKEphemeralGoneWithSession(t *testing.T) {
	srv := sharedZK(t)
	root := testRoot()
	a := newZK(t, srv.Addr(), root, 4*time.Second)
	b := newZK(t, srv.Addr(), root, 4*time.Second)
	start(t, a)
	start(t, b)
	if err := a.Register(context.Background(), worker("w1:1", 0)); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 5*time.Second, "b sees w1", func() bool { return hasNode(b, RoleWorker, "w1:1") })
	a.Stop() // closes the session: the node goes at once, well within the timeout
	testwait.Until(t, 4*time.Second, "b sees w1 leave after a's session closed", func() bool {
		return !hasNode(b, RoleWorker, "w1:1")
	})
	if err := a.Register(context.Background(), worker("w1:1", 0)); !errors.Is(err, ErrStopped) {
		t.Fatalf("Register after Stop = %v, want ErrStopped", err)
	}
}

// A process restarted at the same address registers while its old session
// still lingers on the server: the new registration replaces the old node,
// and the old session's end does not take the new node with it.
func TestZKRestartedNodeReplacesStale(t *testing.T) {
	srv := sharedZK(t)
	root := testRoot()
	proxy := zktest.NewProxy(t, srv.Addr())
	old := newZK(t, proxy.Addr(), root, 2*time.Second)
	start(t, old)
	ctx := context.Background()
	if err := old.Register(ctx, worker("w1:1", 1)); err != nil {
		t.Fatal(err)
	}
	if err := old.Register(ctx, Node{Role: RoleMaster, Addr: "old-only:1"}); err != nil {
		t.Fatal(err)
	}
	proxy.Partition() // the old process is gone without closing its session
	old.Stop()

	fresh := newZK(t, srv.Addr(), root, 2*time.Second)
	watcher := newZK(t, srv.Addr(), root, 2*time.Second)
	start(t, fresh)
	start(t, watcher)
	if err := fresh.Register(ctx, worker("w1:1", 7)); err != nil {
		t.Fatal(err)
	}
	cur, _ := fresh.session()
	_, st, err := cur.conn.Get(fresh.paths.node(RoleWorker, "w1:1"))
	if err != nil {
		t.Fatal(err)
	}
	if st.EphemeralOwner != cur.id {
		t.Fatalf("w1 owned by session %x, want the new session %x", st.EphemeralOwner, cur.id)
	}
	// The old session expires on the server: its other node goes, w1 stays.
	testwait.Until(t, 10*time.Second, "the old session's node expires", func() bool {
		return !hasNode(watcher, RoleMaster, "old-only:1")
	})
	n, ok := findNode(watcher, RoleWorker, "w1:1")
	if !ok || n.Heartbeat.Running != 7 {
		t.Fatalf("after the old session expired w1 = %+v, %v; want the new registration", n, ok)
	}
}

func TestZKElection(t *testing.T) {
	srv := sharedZK(t)
	root := testRoot()
	a := newZK(t, srv.Addr(), root, 4*time.Second)
	b := newZK(t, srv.Addr(), root, 4*time.Second)
	start(t, a)
	start(t, b)
	ctx := context.Background()

	ta, err := a.Campaign(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Campaign(ctx, "a"); !errors.Is(err, ErrCampaignActive) {
		t.Fatalf("second campaign while leading = %v, want ErrCampaignActive", err)
	}
	testwait.Until(t, 5*time.Second, "b sees a lead", func() bool { id, ok := b.Leader(); return ok && id == "a" })

	// A campaign given up leaves nothing behind.
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	if _, err := b.Campaign(short, "b"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("campaign against a leader = %v, want deadline exceeded", err)
	}
	cancel()

	wonB := campaignAsync(b, "b")
	a.Resign()
	select {
	case <-ta.Lost:
	default:
		t.Fatal("a's Lost open after Resign")
	}
	tb := awaitTerm(t, wonB, 10*time.Second, "b")
	if tb.Epoch <= ta.Epoch {
		t.Fatalf("epochs a=%d b=%d: want b higher", ta.Epoch, tb.Epoch)
	}
	testwait.Until(t, 5*time.Second, "a sees b lead", func() bool { id, ok := a.Leader(); return ok && id == "b" })

	// The leader stops: its session closes and a takes over.
	wonA := campaignAsync(a, "a")
	b.Stop()
	select {
	case <-tb.Lost:
	default:
		t.Fatal("b's Lost open after Stop")
	}
	ta2 := awaitTerm(t, wonA, 10*time.Second, "a")
	if ta2.Epoch <= tb.Epoch {
		t.Fatalf("epochs b=%d a=%d: want a higher", tb.Epoch, ta2.Epoch)
	}
}

type campaignResult struct {
	term Term
	err  error
	at   time.Time
}

func campaignAsync(e Elector, id string) <-chan campaignResult {
	ch := make(chan campaignResult, 1)
	go func() {
		t, err := e.Campaign(context.Background(), id)
		ch <- campaignResult{t, err, time.Now()}
	}()
	return ch
}

func awaitTerm(t *testing.T, ch <-chan campaignResult, within time.Duration, who string) Term {
	t.Helper()
	r := awaitResult(t, ch, within, who)
	return r.term
}

func awaitResult(t *testing.T, ch <-chan campaignResult, within time.Duration, who string) campaignResult {
	t.Helper()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("%s campaign: %v", who, r.err)
		}
		return r
	case <-time.After(within):
		t.Fatalf("%s did not win within %v", who, within)
	}
	panic("unreachable")
}

// The leader is cut off from ZooKeeper (a crash or a partition, as far as
// the others can tell): it stops leading before the standby takes over,
// and once the network is back its session is new and its registration is
// written again without help.
func TestZKLeaderPartitioned(t *testing.T) {
	srv := sharedZK(t)
	root := testRoot()
	proxy := zktest.NewProxy(t, srv.Addr())
	const timeout = 3 * time.Second
	a := newZK(t, proxy.Addr(), root, timeout)
	b := newZK(t, srv.Addr(), root, timeout)
	start(t, a)
	start(t, b)
	states := watchStates(t, a)
	ctx := context.Background()
	if err := a.Register(ctx, Node{Role: RoleMaster, Addr: "a:1"}); err != nil {
		t.Fatal(err)
	}
	ta, err := a.Campaign(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	wonB := campaignAsync(b, "b")

	cutAt := time.Now()
	proxy.Partition()
	var lostAt time.Time
	select {
	case <-ta.Lost:
		lostAt = time.Now()
	case <-time.After(2 * timeout):
		t.Fatal("a still leads while cut off")
	}
	rb := awaitResult(t, wonB, 3*timeout, "b")
	if !lostAt.Before(rb.at) {
		t.Fatalf("a lost leadership at +%v, b won at +%v: two leaders", lostAt.Sub(cutAt), rb.at.Sub(cutAt))
	}
	if rb.term.Epoch <= ta.Epoch {
		t.Fatalf("epochs a=%d b=%d: want b higher", ta.Epoch, rb.term.Epoch)
	}
	t.Logf("a stepped down %v after the cut; b led %v after it", lostAt.Sub(cutAt), rb.at.Sub(cutAt))
	testwait.Until(t, 2*timeout, "a's registration expires", func() bool { return !hasNode(b, RoleMaster, "a:1") })
	states.waitSeq(t, 3*timeout, 0, Connected, Suspended, Expired)

	n := len(states.seen())
	proxy.Heal()
	states.waitSeq(t, 3*timeout, n, Connected)
	testwait.Until(t, 5*time.Second, "a's registration written again", func() bool { return hasNode(b, RoleMaster, "a:1") })
	if id, ok := a.Leader(); !ok || id != "b" {
		t.Fatalf("a sees leader %q %v, want b", id, ok)
	}
}

// A silent partition: the client notices the loss only when nothing was
// read for two thirds of the timeout, but the server expires the session
// one timeout after it last heard from it. The local expiry counts from
// the last byte read, so Expired comes about when the server drops the
// session (a master fails a worker over a grace period after that), not
// up to two thirds of a timeout later.
func TestZKLocalExpiryFromLastHeard(t *testing.T) {
	srv := sharedZK(t)
	root := testRoot()
	proxy := zktest.NewProxy(t, srv.Addr())
	const timeout = 3 * time.Second
	a := newZK(t, proxy.Addr(), root, timeout)
	b := newZK(t, srv.Addr(), root, timeout)
	start(t, a)
	start(t, b)
	if err := a.Register(context.Background(), worker("w:1", 0)); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 5*time.Second, "b sees w", func() bool { return hasNode(b, RoleWorker, "w:1") })
	ch, cancel := a.States()
	defer cancel()
	<-ch // the current state

	cutAt := time.Now()
	proxy.Partition()
	var expiredAt time.Time
	deadline := time.After(3 * timeout)
	for expiredAt.IsZero() {
		select {
		case s := <-ch:
			if s == Expired {
				expiredAt = time.Now()
			}
		case <-deadline:
			t.Fatal("no Expired within three session timeouts of the cut")
		}
	}
	testwait.Until(t, 2*timeout, "server expires a's session", func() bool { return !hasNode(b, RoleWorker, "w:1") })
	goneAt := time.Now()
	t.Logf("a took its session as expired %v after the cut; b saw its node go %v after it",
		expiredAt.Sub(cutAt).Round(time.Millisecond), goneAt.Sub(cutAt).Round(time.Millisecond))
	if took := expiredAt.Sub(cutAt); took > timeout+500*time.Millisecond {
		t.Fatalf("Expired %v after the cut, want within the session timeout (%v) of the last byte heard", took, timeout)
	}
}

// proxiedPair is a registry a behind a proxy (prep, if set, adjusts it
// before it starts) with worker w:1 registered, and a registry b on the
// server directly that sees it; the states a goes through are logged.
func proxiedPair(t *testing.T, timeout time.Duration, prep func(*ZK)) (*zktest.Proxy, *ZK, *ZK, *stateLog) {
	t.Helper()
	srv := sharedZK(t)
	root := testRoot()
	proxy := zktest.NewProxy(t, srv.Addr())
	a := newZK(t, proxy.Addr(), root, timeout)
	if prep != nil {
		prep(a)
	}
	b := newZK(t, srv.Addr(), root, timeout)
	start(t, a)
	start(t, b)
	states := watchStates(t, a)
	if err := a.Register(context.Background(), worker("w:1", 0)); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 5*time.Second, "b sees w", func() bool { return hasNode(b, RoleWorker, "w:1") })
	return proxy, a, b, states
}

// Expiry as the server reports it on reconnect (the local timer is out of
// the way): Expired, then a new session with the registrations back.
func TestZKServerReportedExpiry(t *testing.T) {
	proxy, a, b, states := proxiedPair(t, 2*time.Second, func(a *ZK) { a.localExpiry = time.Hour })
	before, _ := a.session()
	newSessions := counterOf(t, metrics.ZKNewSession)

	proxy.Partition()
	states.waitSeq(t, 10*time.Second, 0, Suspended)
	testwait.Until(t, 10*time.Second, "server expires a's session", func() bool { return !hasNode(b, RoleWorker, "w:1") })
	proxy.Heal()
	states.waitSeq(t, 15*time.Second, 0, Suspended, Expired, Connected)
	testwait.Until(t, 5*time.Second, "w registered again", func() bool { return hasNode(b, RoleWorker, "w:1") })
	after, _ := a.session()
	if after.id == before.id || after.gen == before.gen {
		t.Fatalf("session %x gen %d after expiry, same as before", after.id, after.gen)
	}
	if d := counterOf(t, metrics.ZKNewSession) - newSessions; d < 1 {
		t.Fatalf("new-session reconnects moved by %v, want >= 1", d)
	}
}

// Connections drop again and again within one session while heartbeats
// are in flight: every drop is Suspended then Reconnected, the session and
// the registration stay, and the heartbeats land.
func TestZKRepeatedReconnects(t *testing.T) {
	srv := sharedZK(t)
	root := testRoot()
	proxy := zktest.NewProxy(t, srv.Addr())
	a := newZK(t, proxy.Addr(), root, 10*time.Second)
	b := newZK(t, srv.Addr(), root, 10*time.Second)
	start(t, a)
	start(t, b)
	states := watchStates(t, a)
	before, _ := a.session()
	within := counterOf(t, metrics.ZKWithinSession)
	stop := make(chan struct{})
	done := make(chan struct{})
	var beats atomic.Int64
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			if a.Register(ctx, worker("w:1", int(beats.Load()))) == nil {
				beats.Add(1)
			}
			cancel()
		}
	}()
	for range 3 {
		n := len(states.seen())
		proxy.Heal() // drops every connection through the proxy
		states.waitSeq(t, 10*time.Second, n, Suspended, Reconnected)
	}
	close(stop)
	<-done
	after, _ := a.session()
	if after.id != before.id {
		t.Fatalf("session changed from %x to %x", before.id, after.id)
	}
	if d := counterOf(t, metrics.ZKWithinSession) - within; d < 3 {
		t.Fatalf("within-session reconnects moved by %v, want >= 3", d)
	}
	if beats.Load() == 0 {
		t.Fatal("no heartbeat landed")
	}
	if err := a.Register(context.Background(), worker("w:1", 1_000_000)); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 5*time.Second, "b sees the last heartbeat", func() bool {
		n, ok := findNode(b, RoleWorker, "w:1")
		return ok && n.Heartbeat.Running == 1_000_000
	})
}

// ZooKeeper itself restarts within the session timeout: the session
// survives, so do the registrations.
func TestZKServerRestart(t *testing.T) {
	srv := zktest.Start(t)
	root := testRoot()
	a := newZK(t, srv.Addr(), root, 10*time.Second)
	start(t, a)
	states := watchStates(t, a)
	if err := a.Register(context.Background(), worker("w:1", 0)); err != nil {
		t.Fatal(err)
	}
	before, _ := a.session()

	srv.Stop()
	states.waitSeq(t, 10*time.Second, 0, Connected, Suspended)
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	states.waitSeq(t, 10*time.Second, 0, Connected, Suspended, Reconnected)
	after, _ := a.session()
	if after.id != before.id {
		t.Fatalf("session %x after the restart, want %x kept", after.id, before.id)
	}
	for _, s := range states.seen() {
		if s == Expired {
			t.Fatalf("session expired across a short restart: %v", states.seen())
		}
	}
	c := newZK(t, srv.Addr(), root, 4*time.Second)
	start(t, c)
	if !hasNode(c, RoleWorker, "w:1") {
		t.Fatal("registration lost across the restart")
	}
	// Heartbeats still land.
	if err := a.Register(context.Background(), worker("w:1", 5)); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 5*time.Second, "heartbeat after restart", func() bool {
		n, _ := findNode(c, RoleWorker, "w:1")
		return n.Heartbeat.Running == 5
	})
}

// Start waits for a ZooKeeper that is not there yet, and gives up with an
// error when its context ends.
func TestZKStartWhileDown(t *testing.T) {
	srv := zktest.Start(t)
	srv.Stop()
	root := testRoot()

	early := newZK(t, srv.Addr(), root, 4*time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	err := early.Start(ctx)
	cancel()
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Start with nothing listening = %v, want deadline exceeded", err)
	}

	a := newZK(t, srv.Addr(), root, 4*time.Second)
	started := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		started <- a.Start(ctx)
	}()
	registered := make(chan error, 1)
	go func() { registered <- a.Register(context.Background(), worker("w:1", 0)) }()
	select {
	case err := <-started:
		t.Fatalf("Start returned %v with ZooKeeper down", err)
	default:
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-started:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Start did not complete after ZooKeeper came up")
	}
	if err := <-registered; err != nil {
		t.Fatal(err)
	}
	if !hasNode(a, RoleWorker, "w:1") {
		t.Fatal("registration made while down is missing")
	}
}

// A three-server ensemble loses its leader server: clients move to the
// others within their sessions, registrations stay, election still works.
func TestZKEnsembleLosesOne(t *testing.T) {
	c := zktest.Ensemble(t, 3)
	root := testRoot()
	a := newZK(t, c.Addr(), root, 10*time.Second)
	b := newZK(t, c.Addr(), root, 10*time.Second)
	start(t, a)
	start(t, b)
	statesA := watchStates(t, a)
	ctx := context.Background()
	if err := a.Register(ctx, worker("a:1", 0)); err != nil {
		t.Fatal(err)
	}
	before, _ := a.session()

	leader := c.Leader()
	if leader == nil {
		t.Fatal("ensemble has no leader")
	}
	leader.Stop()

	if err := b.Register(ctx, worker("b:1", 0)); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 15*time.Second, "a sees b's registration after the loss", func() bool { return hasNode(a, RoleWorker, "b:1") })
	testwait.Until(t, 15*time.Second, "b sees a's registration after the loss", func() bool { return hasNode(b, RoleWorker, "a:1") })
	after, _ := a.session()
	if after.id != before.id {
		t.Fatalf("a's session changed from %x to %x", before.id, after.id)
	}
	for _, s := range statesA.seen() {
		if s == Expired {
			t.Fatalf("a's session expired: %v", statesA.seen())
		}
	}
	tb, err := b.Campaign(ctx, "b")
	if err != nil {
		t.Fatal(err)
	}
	wonA := campaignAsync(a, "a")
	b.Resign()
	ta := awaitTerm(t, wonA, 15*time.Second, "a")
	if ta.Epoch <= tb.Epoch {
		t.Fatalf("epochs b=%d a=%d: want a higher", tb.Epoch, ta.Epoch)
	}
}

func counterOf(t *testing.T, c prometheus.Counter) float64 {
	t.Helper()
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// A loss of the link to ZooKeeper that ends well within the session
// disturbs nothing: the client reconnects to the same session before the
// server (or its own clock) expires it, whether the path comes back with
// resets (as when ZooKeeper restarts) or silently (a handshake begun on
// the dead path is never answered). The cut is 3/4 of the session with
// resets; 1/2 when silent, which leaves a handshake's limit to notice it.
func TestZKLossWithinSession(t *testing.T) {
	const timeout = 4 * time.Second
	for _, tc := range []struct {
		name string
		cut  time.Duration
		heal func(*zktest.Proxy)
	}{
		{"resets", timeout * 3 / 4, (*zktest.Proxy).Heal},
		{"silent", timeout / 2, (*zktest.Proxy).Resume},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proxy, a, b, states := proxiedPair(t, timeout, nil)
			before, _ := a.session()

			proxy.Partition()
			proxy.Drop() // a's connection ends now: it dials again into the cut
			cutAt := time.Now()
			states.waitSeq(t, timeout, 0, Suspended)
			time.Sleep(tc.cut - time.Since(cutAt)) // time is the subject: the loss lasts this long
			tc.heal(proxy)
			healedAt := time.Now()
			states.waitSeq(t, timeout, 0, Suspended, Reconnected)
			t.Logf("reconnected %v after the heal (%v cut, session %v)", time.Since(healedAt).Round(time.Millisecond), tc.cut, timeout)
			if seen := states.seen(); slices.Contains(seen, Expired) {
				t.Fatalf("states %v: the session was taken as expired", seen)
			}
			if after, _ := a.session(); after.id != before.id || after.gen != before.gen {
				t.Fatalf("session %x gen %d after the loss, want %x gen %d kept", after.id, after.gen, before.id, before.gen)
			}
			if err := a.Register(context.Background(), worker("w:1", 7)); err != nil {
				t.Fatal(err)
			}
			testwait.Until(t, 5*time.Second, "b sees the heartbeat after the loss", func() bool {
				n, ok := findNode(b, RoleWorker, "w:1")
				return ok && n.Heartbeat.Running == 7
			})
		})
	}
}
