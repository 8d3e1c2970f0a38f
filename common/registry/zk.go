package registry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/clusterkey"
	"github.com/beluga-scheduler/beluga/internal/startstop"
)

// ZKConfig configures the ZooKeeper registry.
type ZKConfig struct {
	// Servers are ZooKeeper client addresses, "host:port"; an entry may
	// also be a comma-separated list.
	Servers []string
	// Root is the path Beluga keeps its znodes under (default "/beluga").
	Root string
	// SessionTimeout is how long ZooKeeper keeps this process's session,
	// and so its registrations and leadership, without hearing from it
	// (default 5s). The server clamps it to [2, 20] x tickTime unless its
	// min/maxSessionTimeout say otherwise. It bounds failover time.
	SessionTimeout time.Duration
	// Secret, when set, closes the registry to non-members (zk_auth.go):
	// digest ACLs on every znode, signed registrations. The beluga
	// binaries always set it; registry tests may not.
	Secret clusterkey.Secret
}

// ZK is the cluster registry on ZooKeeper. Layout under Root:
//
//	nodes/masters/<addr>   ephemeral, the master's Node JSON
//	nodes/workers/<addr>   ephemeral, the worker's Node JSON (groups inside)
//	election/n_<seq>       ephemeral sequential, one per campaigning master
//
// Workers have one znode each with their groups in the JSON, rather than
// one per group (nodes/workers/<group>/<addr>): a worker is one process
// with one session and one heartbeat, and its groups change by a data write
// instead of moving znodes. Nodes filters by group in memory.
//
// One goroutine, the session loop (zk_session.go), owns the ZooKeeper
// session: it connects, keeps the watches that mirror nodes/ and election/
// in memory (so Nodes and Leader never touch the network), writes this
// process's registrations, and on expiry opens a new session and writes
// them again. Callers only record what they want under a small lock and
// wait for the loop to confirm.
//
// Heartbeats: call Register again with the new Heartbeat; it updates the
// znode (ZooKeeper's Set), and every watcher sees it through Changes.
type ZK struct {
	cfg     ZKConfig
	cfgErr  error
	servers []string
	paths   zkPaths
	log     *zap.Logger
	// localExpiry is how long the server may stay unheard (counted from
	// the last byte read, see session.untilExpiry) before a suspended
	// session is taken as expired without the server saying so (the
	// server expires it after SessionTimeout of silence, and cannot tell a
	// client it cannot reach). Tests lengthen it to see the server's word.
	localExpiry time.Duration

	kick chan struct{} // buffered 1: registrations or election clean-up wait for the loop

	life      startstop.Base // Start once; owns the session loop
	stopOnce  sync.Once      // Stop's first half (release), before the loop ends
	stopping  chan struct{}  // closed first in Stop: waiters return ErrStopped
	loopDone  chan struct{}  // closed when the session loop has exited
	termWG    sync.WaitGroup
	stopState bool // under mu: no new term watchers once set

	mu         sync.Mutex // leaf lock; never held across a network call
	reg        map[nodeKey]*regEntry
	regSeq     uint64
	regCond    chan struct{} // closed and replaced when a registration write completes
	view       map[Role]map[string]Node
	leaderID   string
	leaderEp   int64           // epoch of leaderID's term: its election node's sequence + 1
	ignored    map[string]bool // registrations ignored and logged (zk_auth.go)
	cur        sessionInfo
	stateCh    chan struct{} // closed and replaced when cur changes
	state      ConnState     // last published; 0 before the first session
	changeSubs map[int]chan struct{}
	stateSubs  map[int]chan ConnState
	nextSub    int
	elect      electState
}

// sessionInfo is the current session as seen by callers.
type sessionInfo struct {
	conn  *zk.Conn
	id    int64  // ZooKeeper session id
	gen   uint64 // one per session: a new one after expiry
	ready bool   // connected, directories made, registrations written
}

type nodeKey struct {
	role Role
	addr string
}

// regEntry is what this process wants registered at one key. ver grows with
// every Register/Deregister; doneVer is the highest version written.
type regEntry struct {
	node    Node
	data    []byte
	present bool
	ver     uint64
	doneVer uint64
	err     error // result of writing doneVer
}

type zkPaths struct{ root, masters, workers, election string }

// isDir says whether p is one of the directories the registry keeps.
func (p zkPaths) isDir(path string) bool {
	return path == p.root || path == p.masters || path == p.workers || path == p.election
}

func (p zkPaths) dir(r Role) string {
	if r == RoleMaster {
		return p.masters
	}
	return p.workers
}

func (p zkPaths) node(r Role, addr string) string { return p.dir(r) + "/" + addr }

// roleOf maps a znode path to the role and address it registers.
func (p zkPaths) roleOf(path string) (Role, string, bool) {
	for _, r := range []Role{RoleMaster, RoleWorker} {
		if name, ok := strings.CutPrefix(path, p.dir(r)+"/"); ok && !strings.Contains(name, "/") {
			return r, name, true
		}
	}
	return "", "", false
}

const stateBuffer = 64

// NewZK builds the registry; nothing connects until Start. A bad config is
// reported by Start.
func NewZK(cfg ZKConfig, log *zap.Logger) *ZK {
	if cfg.Root == "" {
		cfg.Root = "/beluga"
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = 5 * time.Second
	}
	z := &ZK{
		cfg: cfg, log: log.Named("registry"), localExpiry: cfg.SessionTimeout,
		kick: make(chan struct{}, 1), stopping: make(chan struct{}), loopDone: make(chan struct{}),
		reg: map[nodeKey]*regEntry{}, regCond: make(chan struct{}), stateCh: make(chan struct{}),
		view:       map[Role]map[string]Node{RoleMaster: {}, RoleWorker: {}},
		changeSubs: map[int]chan struct{}{}, stateSubs: map[int]chan ConnState{}, ignored: map[string]bool{},
	}
	z.life.Name, z.life.Log = "zookeeper registry", z.log
	z.servers, z.cfgErr = parseServers(cfg.Servers)
	if z.cfgErr == nil {
		z.paths, z.cfgErr = parseRoot(cfg.Root)
	}
	return z
}

func parseServers(in []string) ([]string, error) {
	var out []string
	for _, entry := range in {
		for _, s := range strings.Split(entry, ",") {
			s = strings.TrimSpace(s)
			if s == "" {
				continue
			}
			host, port, err := net.SplitHostPort(s)
			if err != nil || host == "" {
				return nil, fmt.Errorf("registry: zookeeper server %q: want host:port", s)
			}
			if n, err := strconv.Atoi(port); err != nil || n <= 0 || n > 65535 {
				return nil, fmt.Errorf("registry: zookeeper server %q: bad port", s)
			}
			out = append(out, s)
		}
	}
	if len(out) == 0 {
		return nil, errors.New("registry: no zookeeper servers configured")
	}
	return out, nil
}

func parseRoot(root string) (zkPaths, error) {
	if !strings.HasPrefix(root, "/") {
		return zkPaths{}, fmt.Errorf("registry: zookeeper root %q: must start with /", root)
	}
	root = strings.TrimRight(root, "/")
	if root != "" {
		parts := strings.Split(root[1:], "/")
		if parts[0] == "zookeeper" {
			return zkPaths{}, fmt.Errorf("registry: zookeeper root %q: /zookeeper is reserved", root)
		}
		for _, part := range parts {
			if validName(part) != nil {
				return zkPaths{}, fmt.Errorf("registry: zookeeper root %q: bad path element %q", root, part)
			}
		}
	}
	return zkPaths{root: root, masters: root + "/nodes/masters", workers: root + "/nodes/workers",
		election: root + "/election"}, nil
}

// validName checks that s can be one znode path element.
func validName(s string) error {
	if s == "" || s == "." || s == ".." {
		return fmt.Errorf("%q is not a usable znode name", s)
	}
	for _, r := range s {
		if r == '/' || r < 0x20 || r == 0x7f {
			return fmt.Errorf("%q is not a usable znode name (no '/' or control characters)", s)
		}
	}
	return nil
}

// Start connects and returns once the first session is established, the
// directories exist, the registrations made so far are written and the
// view is loaded. While ZooKeeper is unreachable it retries with back-off,
// logging every few tries, until ctx ends: then it stops the registry and
// returns an error (pass a context without deadline to wait for ever).
func (z *ZK) Start(ctx context.Context) error {
	if z.cfgErr != nil {
		return z.cfgErr
	}
	err := z.life.StartWith(context.WithoutCancel(ctx), func() error { return z.start(ctx) }, z.stopped)
	if errors.Is(err, startstop.ErrStopped) {
		return ErrStopped
	}
	return err
}

func (z *ZK) start(ctx context.Context) error {
	select {
	case <-z.stopping:
		return ErrStopped
	default:
	}
	z.log.Info("connecting to zookeeper", zap.Strings("servers", z.servers), zap.String("root", z.paths.root),
		zap.Duration("session_timeout", z.cfg.SessionTimeout))
	z.life.Go(z.run)
	for {
		cur, changed := z.session()
		if cur.ready {
			return nil
		}
		select {
		case <-changed:
		case <-z.stopping:
			return ErrStopped
		case <-ctx.Done():
			z.stopOnce.Do(z.release) // StartWith then ends the loop, as Stop would
			return fmt.Errorf("registry: no zookeeper session with %s: %w", strings.Join(z.servers, ","), ctx.Err())
		}
	}
}

// Stop shuts down in this order: waiters (Register, Campaign) are released
// with ErrStopped; the leadership term ends (Lost closes) while the lock
// znode still exists, so no other master can lead before this one knows it
// stopped; then the session loop closes the session, which removes this
// process's ephemeral znodes at once instead of after the session timeout;
// Stop returns after the loop and the client's goroutines exited, or at
// startstop's bound (logged). Safe twice and before Start.
func (z *ZK) Stop() {
	z.stopOnce.Do(z.release)
	_ = z.life.Stop(z.stopped)
}

// release is Stop's first half: no new waiter or term, waiters released,
// and the term watchers waited for (bounded), all before the loop ends.
func (z *ZK) release() {
	z.mu.Lock()
	z.stopState = true
	z.mu.Unlock()
	close(z.stopping)
	watchers := make(chan struct{})
	go func() { // ends with the watchers, which return on stopping
		z.termWG.Wait()
		close(watchers)
	}()
	t := time.NewTimer(startstop.DefaultStopTimeout)
	defer t.Stop()
	select {
	case <-watchers:
	case <-t.C:
		z.log.Error("stop: leadership watcher still running at the deadline; closing the session anyway")
	}
}

func (z *ZK) stopped() { z.log.Info("zookeeper registry stopped") }

// Register implements Registry. The registration belongs to this process:
// it is written again after a session expiry, and replaces a znode left at
// the same address by an earlier session (a restarted process). Register
// returns once ZooKeeper has it or ctx ends; while suspended it waits for
// the reconnect (the registration is kept either way).
func (z *ZK) Register(ctx context.Context, n Node) error {
	if n.Role != RoleMaster && n.Role != RoleWorker {
		return fmt.Errorf("registry: register: unknown role %q (want master or worker)", n.Role)
	}
	if err := validName(n.Addr); err != nil {
		return fmt.Errorf("registry: register %s: address %w", n.Role, err)
	}
	data, err := z.encodeNode(n)
	if err != nil {
		return fmt.Errorf("registry: register %s %s: %w", n.Role, n.Addr, err)
	}
	return z.want(ctx, nodeKey{n.Role, n.Addr}, n, data, true)
}

// Deregister implements Registry. It removes the znode only when this
// process's session owns it.
func (z *ZK) Deregister(ctx context.Context, role Role, addr string) error {
	if role != RoleMaster && role != RoleWorker {
		return fmt.Errorf("registry: deregister: unknown role %q", role)
	}
	if err := validName(addr); err != nil {
		return fmt.Errorf("registry: deregister %s: address %w", role, err)
	}
	return z.want(ctx, nodeKey{role, addr}, Node{}, nil, false)
}

// want records a registration change and waits until the loop wrote it.
func (z *ZK) want(ctx context.Context, key nodeKey, n Node, data []byte, present bool) error {
	z.mu.Lock()
	if z.stopState {
		z.mu.Unlock()
		return ErrStopped
	}
	e := z.reg[key]
	if e == nil {
		e = &regEntry{}
		z.reg[key] = e
	}
	z.regSeq++
	ver := z.regSeq
	e.node, e.data, e.present, e.ver = n, data, present, ver
	z.mu.Unlock()
	z.kickLoop()
	for {
		z.mu.Lock()
		done, err, cond := e.doneVer >= ver, e.err, z.regCond
		z.mu.Unlock()
		if done {
			return err
		}
		select {
		case <-cond:
		case <-ctx.Done():
			return fmt.Errorf("registry: %s %s not yet written to zookeeper (kept for the next session): %w",
				key.role, key.addr, ctx.Err())
		case <-z.stopping:
			return ErrStopped
		}
	}
}

func (z *ZK) kickLoop() {
	select {
	case z.kick <- struct{}{}:
	default: // a kick is already pending
	}
}

// Nodes implements Registry from the in-memory view, sorted by address.
// While suspended or after expiry it is the last view seen until the new
// session has reloaded it.
func (z *ZK) Nodes(role Role) []Node {
	z.mu.Lock()
	defer z.mu.Unlock()
	out := make([]Node, 0, len(z.view[role]))
	for _, n := range z.view[role] {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	return out
}

// Changes implements Registry: it fires on joins, leaves, heartbeats and
// leader changes.
func (z *ZK) Changes() (<-chan struct{}, func()) {
	z.mu.Lock()
	defer z.mu.Unlock()
	id := z.nextSub
	z.nextSub++
	ch := make(chan struct{}, 1)
	z.changeSubs[id] = ch
	return ch, func() {
		z.mu.Lock()
		delete(z.changeSubs, id)
		z.mu.Unlock()
	}
}

// States implements StateWatcher. A subscriber that falls more than 64
// changes behind loses the newest ones (logged): read it promptly.
func (z *ZK) States() (<-chan ConnState, func()) {
	z.mu.Lock()
	defer z.mu.Unlock()
	id := z.nextSub
	z.nextSub++
	ch := make(chan ConnState, stateBuffer)
	switch {
	case z.cur.ready:
		ch <- Connected
	case z.state != 0:
		ch <- z.state
	}
	z.stateSubs[id] = ch
	return ch, func() {
		z.mu.Lock()
		delete(z.stateSubs, id)
		z.mu.Unlock()
	}
}

// session returns the current session and a channel closed at its next
// change.
func (z *ZK) session() (sessionInfo, <-chan struct{}) {
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.cur, z.stateCh
}

func (z *ZK) setSession(s sessionInfo) {
	z.mu.Lock()
	z.cur = s
	close(z.stateCh)
	z.stateCh = make(chan struct{})
	z.mu.Unlock()
}

func (z *ZK) publish(s ConnState) {
	z.mu.Lock()
	defer z.mu.Unlock()
	z.state = s
	for _, ch := range z.stateSubs {
		select {
		case ch <- s:
		default:
			z.log.Warn("connection state subscriber is not reading; state dropped", zap.Stringer("state", s))
		}
	}
}

func (z *ZK) notifyLocked() {
	for _, ch := range z.changeSubs {
		select {
		case ch <- struct{}{}:
		default: // a signal is already pending
		}
	}
}

// isConnErr reports errors that mean "no session to talk through right
// now": the operation is retried once the session is back.
func isConnErr(err error) bool {
	return errors.Is(err, zk.ErrConnectionClosed) || errors.Is(err, zk.ErrNoServer) ||
		errors.Is(err, zk.ErrSessionExpired) || errors.Is(err, zk.ErrSessionMoved) ||
		errors.Is(err, zk.ErrClosing)
}
