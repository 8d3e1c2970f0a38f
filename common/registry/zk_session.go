package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"path"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/metrics"
)

var openACL = zk.WorldACL(zk.PermAll)

// run is the session loop: one zk.Conn per ZooKeeper session. The client
// library would open a new session on the same Conn after expiry by
// itself; a fresh Conn instead makes "everything of the old session is
// gone" explicit (watches, versions, election node) and is where Expired is
// published before anything is registered again.
func (z *ZK) run(ctx context.Context) {
	defer close(z.loopDone)
	var gen uint64
	for ctx.Err() == nil {
		gen++
		s := &session{z: z, gen: gen, synced: map[nodeKey]uint64{}, versions: map[string]int32{},
			events: eventQueue{signal: make(chan struct{}, 1)}, base: time.Now()}
		s.run(ctx)
	}
}

// session is the loop's state for one zk.Conn. Only the loop goroutine
// touches it, apart from the atomics the dialer uses.
type session struct {
	z      *ZK
	gen    uint64
	conn   *zk.Conn
	events eventQueue

	id          int64 // ZooKeeper session id, once established
	established bool  // the server gave us a session
	ready       bool  // established, connected and set up
	announced   bool  // Connected was published for this session
	authed      bool  // the cluster's digest credentials were added
	synced      map[nodeKey]uint64
	versions    map[string]int32 // data version of our registrations as last written

	expiry *time.Timer // runs while suspended
	retry  *time.Timer // set-up retry after a failure that is not a disconnect

	// Used by the dialer, which runs on the client's goroutine.
	base       time.Time    // monotonic origin of heard
	heard      atomic.Int64 // when the server was last heard from, as time since base
	attempts   atomic.Int64 // dials since the last connection was made
	lastDial   atomic.Int64 // when the last dial began, as time since base
	hadSession atomic.Bool
	closing    atomic.Bool
	netMu      sync.Mutex
	lastNet    net.Conn
	live       *heardConn // lastNet's heardConn, for keepAlive
}

// Reconnecting within a session: a loss that ends before the server
// expires the session must disturb nothing, and the server expires it a
// session timeout after it last heard from this client. Three things
// stood in the way (a worker cut for 3/4 of its session took it as
// expired): the client pinged only every third of the session, so the
// server's clock could have started that much before the loss; the
// library pauses a second before each round of servers (with one server,
// before every reconnect); and a handshake on a path that died under it
// waits ten receive timeouts (6 2/3 sessions). keepAlive, pacedHosts with
// redialWait, and handshakeLimit replace them.
const (
	redialMin    = 50 * time.Millisecond
	redialMax    = 250 * time.Millisecond
	minHandshake = 250 * time.Millisecond
)

// keepAliveEvery is how often the server hears from a connected client:
// a loss of up to the session less this (and the reconnect) is survived.
func keepAliveEvery(session time.Duration) time.Duration { return session / 10 }

// redialWait is how long the n-th dial since the last connection (n >= 1)
// waits once a session exists: the first goes at once, later ones back
// off from redialMin to redialMax, less the time since the dial before
// (a handshake cut at its limit has waited its share already).
func redialWait(n int64, sincePrev time.Duration) time.Duration {
	if n <= 1 {
		return 0
	}
	return max(min(redialMin<<min(n-2, 8), redialMax)-sincePrev, 0)
}

// handshakeLimit bounds the handshake of a reconnect within a session: a
// revalidation, one round trip on a live path.
func handshakeLimit(session time.Duration) time.Duration {
	return max(session/8, minHandshake)
}

// pacedHosts is the library's server list without its second's pause
// between rounds while a session may still be alive: the dialer paces
// (redialWait). Before the first session, and once this client is
// closing (the pause is where the library notices Close), it pauses as
// before.
type pacedHosts struct {
	*zk.DNSHostProvider
	paced func() bool
}

func (h pacedHosts) Next() (string, bool) {
	server, round := h.DNSHostProvider.Next()
	return server, round && !h.paced()
}

func (s *session) run(ctx context.Context) {
	z := s.z
	hosts := pacedHosts{zk.NewDNSHostProvider(), func() bool {
		return s.hadSession.Load() && !s.closing.Load() && ctx.Err() == nil
	}}
	conn, ec, err := zk.Connect(z.servers, z.cfg.SessionTimeout,
		zk.WithEventCallback(s.events.push), zk.WithDialer(s.dial(ctx)), zk.WithHostProvider(hosts),
		zk.WithLogger(clientLogger{z.log.Named("client")}), zk.WithLogInfo(false))
	if err != nil { // only a bad address list or a failed name lookup get here
		z.log.Warn("cannot set up zookeeper client, retrying", zap.Strings("servers", z.servers), zap.Error(err))
		wait(ctx, 2*time.Second)
		return
	}
	s.conn = conn
	// Stop must not wait for a call stuck on a dead connection: closing the
	// client fails every pending call at once.
	unhook := context.AfterFunc(ctx, conn.Close)
	kctx, stopKeepAlive := context.WithCancel(ctx)
	var kept sync.WaitGroup
	kept.Add(1)
	go func() {
		defer kept.Done()
		s.keepAlive(kctx, keepAliveEvery(z.cfg.SessionTimeout))
	}()
	defer func() {
		unhook()
		stopKeepAlive()
		s.teardown(ec)
		kept.Wait() // teardown closed the socket under any ping being written
	}()

	for {
		select {
		case <-ctx.Done():
			return
		case <-s.events.signal:
			for _, ev := range s.events.drain() {
				if ended := s.handle(ev); ended {
					return
				}
			}
		case <-z.kick:
			if s.ready {
				s.work(s.syncOwned, "write registrations")
				s.work(s.scrubElection, "clean up election")
			}
		case <-timerC(s.expiry):
			z.log.Warn("no contact with zookeeper for the session timeout: taking the session as expired",
				zap.String("session", sid(s.id)), zap.Duration("after", z.localExpiry))
			s.expired()
			return
		case <-timerC(s.retry):
			s.retry = nil
			if s.established && !s.ready && s.conn.State() == zk.StateHasSession {
				s.setup()
			}
		}
	}
}

// teardown closes the session and waits for the client's goroutines.
func (s *session) teardown(ec <-chan zk.Event) {
	stopTimer(s.expiry)
	stopTimer(s.retry)
	s.closing.Store(true) // the dialer refuses from now on
	s.conn.Close()        // sends closeSession when connected: our znodes go at once
	// A handshake on a dead path would block the client until its read
	// deadline (ten receive timeouts): close the socket under it.
	s.netMu.Lock()
	if s.lastNet != nil {
		s.lastNet.Close()
	}
	s.netMu.Unlock()
	for range ec { // closed when the client's goroutines have exited
	}
	s.z.setSession(sessionInfo{gen: s.gen})
}

// handle applies one client event; it reports whether the session ended.
func (s *session) handle(ev zk.Event) bool {
	z := s.z
	switch ev.Type {
	case zk.EventSession:
		switch ev.State {
		case zk.StateHasSession:
			if s.established && s.conn.SessionID() != s.id {
				// The client replaced an expired session without saying so.
				z.log.Warn("zookeeper session replaced", zap.String("old", sid(s.id)))
				s.expired()
				return true
			}
			s.connected()
		case zk.StateDisconnected:
			if s.established {
				s.disconnected()
			}
		case zk.StateExpired:
			z.log.Warn("zookeeper session expired", zap.String("session", sid(s.id)))
			s.expired()
			return true
		case zk.StateAuthFailed:
			z.log.Error("zookeeper authentication failed", zap.String("server", ev.Server))
		}
	case zk.EventNodeChildrenChanged, zk.EventNodeDataChanged, zk.EventNodeDeleted:
		if s.ready {
			s.work(func() error { return s.nodeEvent(ev) }, "follow "+ev.Path)
		}
	}
	return false
}

func (s *session) connected() {
	z := s.z
	first := !s.established
	s.established, s.id = true, s.conn.SessionID()
	metrics.ZKConnected(first, s.gen)
	s.hadSession.Store(true)
	s.attempts.Store(0)
	stopTimer(s.expiry)
	s.expiry = nil
	if first {
		z.log.Info("zookeeper session established", zap.String("session", sid(s.id)), zap.String("server", s.conn.Server()))
	} else {
		z.log.Info("zookeeper connection back within the session", zap.String("session", sid(s.id)))
	}
	s.setup()
}

// setup makes the session usable: directories, this process's
// registrations, stale election nodes of ours, then the view. A
// disconnect midway waits for the next connect; any other failure is
// retried shortly.
func (s *session) setup() {
	z := s.z
	steps := []struct {
		name string
		do   func() error
	}{
		{"authenticate", s.authenticate},
		{"create directories", s.ensureDirs},
		{"write registrations", s.syncOwned},
		{"clean up election", s.scrubElection},
		{"load masters", func() error { return s.loadRole(RoleMaster, true) }},
		{"load workers", func() error { return s.loadRole(RoleWorker, true) }},
		{"load leader", s.loadLeader},
	}
	for _, st := range steps {
		if err := st.do(); err != nil {
			if !isConnErr(err) {
				z.log.Error("zookeeper session set-up failed, retrying", zap.String("step", st.name), zap.Error(err))
				stopTimer(s.retry)
				s.retry = time.NewTimer(time.Second)
			}
			return
		}
	}
	s.ready = true
	z.setSession(sessionInfo{conn: s.conn, id: s.id, gen: s.gen, ready: true})
	if s.announced {
		z.publish(Reconnected)
	} else {
		s.announced = true
		z.publish(Connected)
	}
}

func (s *session) disconnected() {
	z := s.z
	metrics.ZKSession.Set(0)
	if s.expiry == nil {
		s.expiry = time.NewTimer(s.untilExpiry())
	}
	if !s.ready {
		return
	}
	s.ready = false
	z.setSession(sessionInfo{conn: s.conn, id: s.id, gen: s.gen})
	z.log.Warn("zookeeper connection lost; session may still be alive", zap.String("session", sid(s.id)))
	z.publish(Suspended)
}

// untilExpiry is how long the session may still be alive as far as the
// server is concerned. The server expires it SessionTimeout after it last
// heard from this client, and its last answer came after that, so the
// clock runs from the last byte read, not from when the client noticed
// the loss (up to two thirds of the timeout later, when the link went
// silent rather than closed). A master fails a worker's tasks over only a
// grace period after the server expired the worker, so a worker that
// kills its tasks when this runs out has them dead before then.
func (s *session) untilExpiry() time.Duration {
	since := time.Since(s.base) - time.Duration(s.heard.Load())
	return max(s.z.localExpiry-since, 0)
}

// expired ends the session: subscribers hear Expired before the next
// session registers anything again.
func (s *session) expired() {
	metrics.ZKSession.Set(0)
	s.ready = false
	s.z.setSession(sessionInfo{gen: s.gen})
	if s.announced {
		s.z.publish(Expired)
	}
}

// work runs one step of the loop; a failure other than a disconnect is
// logged (a disconnect is repaired by the set-up on reconnect).
func (s *session) work(f func() error, what string) {
	if err := f(); err != nil && !isConnErr(err) {
		s.z.log.Warn("zookeeper: "+what+" failed", zap.Error(err))
	}
}

func (s *session) ensureDirs() error {
	p := s.z.paths
	for _, dir := range []string{p.masters, p.workers, p.election} {
		if err := s.ensurePath(dir); err != nil {
			return err
		}
	}
	return s.secureTree(p.root)
}

// ensurePath creates dir and its missing parents as persistent znodes.
func (s *session) ensurePath(dir string) error { return ensurePath(s.conn, dir, s.z.aclFor) }

func ensurePath(conn *zk.Conn, dir string, aclFor func(string) []zk.ACL) error {
	if ok, _, err := conn.Exists(dir); err != nil || ok {
		return err
	}
	if parent := path.Dir(dir); parent != "/" {
		if err := ensurePath(conn, parent, aclFor); err != nil {
			return err
		}
	}
	if _, err := conn.Create(dir, nil, zk.FlagPersistent, aclFor(dir)); err != nil && !errors.Is(err, zk.ErrNodeExists) {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	return nil
}

// syncOwned writes the registrations that changed since this session last
// wrote them.
func (s *session) syncOwned() error {
	z := s.z
	type job struct {
		key     nodeKey
		data    []byte
		present bool
		ver     uint64
	}
	var jobs []job
	z.mu.Lock()
	for k, e := range z.reg {
		if e.ver > s.synced[k] {
			jobs = append(jobs, job{k, e.data, e.present, e.ver})
		}
	}
	z.mu.Unlock()
	for _, j := range jobs {
		p := z.paths.node(j.key.role, j.key.addr)
		var err error
		if j.present {
			err = s.put(p, j.data)
		} else {
			err = s.remove(p)
		}
		if isConnErr(err) {
			return err
		}
		s.synced[j.key] = j.ver
		z.mu.Lock()
		if e := z.reg[j.key]; j.ver > e.doneVer {
			e.doneVer, e.err = j.ver, err
		}
		close(z.regCond)
		z.regCond = make(chan struct{})
		z.mu.Unlock()
	}
	return nil
}

// put writes one of our registrations. A znode at the path from another
// session is a leftover of an earlier process at this address (its session
// has not timed out yet): it is deleted and created again, so it belongs to
// this session and vanishes with it.
func (s *session) put(p string, data []byte) error {
	z := s.z
	if v, ok := s.versions[p]; ok {
		st, err := s.conn.Set(p, data, v)
		if err == nil {
			s.versions[p] = st.Version
			return nil
		}
		if !errors.Is(err, zk.ErrBadVersion) && !errors.Is(err, zk.ErrNoNode) {
			return fmt.Errorf("update %s: %w", p, err)
		}
		delete(s.versions, p)
		z.log.Warn("registration was changed or removed by someone else; writing it again", zap.String("path", p))
	}
	for range 5 {
		_, err := s.conn.Create(p, data, zk.FlagEphemeral, s.z.acl())
		switch {
		case err == nil:
			s.versions[p] = 0
			z.log.Info("registered", zap.String("path", p), zap.String("session", sid(s.id)))
			return nil
		case errors.Is(err, zk.ErrNoNode):
			if err := s.ensurePath(path.Dir(p)); err != nil {
				return err
			}
		case errors.Is(err, zk.ErrNodeExists):
			_, st, err := s.conn.Get(p)
			if errors.Is(err, zk.ErrNoNode) {
				continue
			}
			if err != nil {
				return fmt.Errorf("read %s: %w", p, err)
			}
			if st.EphemeralOwner == s.id { // ours: a create whose answer was lost
				st, err = s.conn.Set(p, data, st.Version)
				if errors.Is(err, zk.ErrBadVersion) {
					continue
				}
				if err != nil {
					return fmt.Errorf("update %s: %w", p, err)
				}
				s.versions[p] = st.Version
				return nil
			}
			z.log.Info("replacing a registration left by an earlier session", zap.String("path", p),
				zap.String("old_session", sid(st.EphemeralOwner)))
			if err := s.conn.Delete(p, st.Version); err != nil && !errors.Is(err, zk.ErrNoNode) && !errors.Is(err, zk.ErrBadVersion) {
				return fmt.Errorf("delete stale %s: %w", p, err)
			}
		default:
			return fmt.Errorf("create %s: %w", p, err)
		}
	}
	return fmt.Errorf("register %s: the znode keeps changing under us", p)
}

// remove deletes one of our registrations, never another session's.
func (s *session) remove(p string) error {
	delete(s.versions, p)
	ok, st, err := s.conn.Exists(p)
	if err != nil || !ok {
		return err
	}
	if st.EphemeralOwner != s.id {
		return nil // a newer process at this address owns it
	}
	if err := s.conn.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
		return fmt.Errorf("delete %s: %w", p, err)
	}
	s.z.log.Info("deregistered", zap.String("path", p))
	return nil
}

// nodeEvent follows one watch firing. Watches are one-shot: every read
// here arms the next one.
func (s *session) nodeEvent(ev zk.Event) error {
	z := s.z
	p := z.paths
	switch {
	case ev.Path == p.masters || ev.Path == p.workers:
		role := RoleMaster
		if ev.Path == p.workers {
			role = RoleWorker
		}
		if ev.Type == zk.EventNodeDeleted { // someone removed our directory
			if err := s.ensureDirs(); err != nil {
				return err
			}
		}
		return s.loadRole(role, false)
	case ev.Path == p.election:
		if ev.Type == zk.EventNodeDeleted {
			if err := s.ensureDirs(); err != nil {
				return err
			}
		}
		return s.loadLeader()
	}
	role, addr, ok := p.roleOf(ev.Path)
	if !ok {
		return nil // an election watch of a campaign: handled there
	}
	// Read what is there now, also after a deletion: a process replacing
	// its registration deletes and creates the znode at once, and a
	// children reload in between may already have kept the new one, which
	// this stale deletion must not remove from the view.
	n, found, err := s.read(role, addr)
	if err != nil {
		return err
	}
	if ev.Type == zk.EventNodeDeleted && !found {
		z.mu.Lock()
		e := z.reg[nodeKey{role, addr}]
		mine := e != nil && e.present && s.synced[nodeKey{role, addr}] >= e.ver
		z.mu.Unlock()
		if mine {
			// Not written again here: two live processes claiming one
			// address would fight in a tight loop. The next heartbeat
			// writes it again.
			z.log.Warn("our registration was deleted by another session", zap.String("path", ev.Path))
		}
	}
	z.setNode(role, addr, n, found)
	return nil
}

// loadRole reloads the children of a role's directory and arms its watch;
// full rereads every child (a new session, or after a reconnect), else
// only the new ones are read (the others' data watches are armed).
func (s *session) loadRole(role Role, full bool) error {
	z := s.z
	names, _, _, err := s.conn.ChildrenW(z.paths.dir(role))
	if err != nil {
		return fmt.Errorf("list %s: %w", z.paths.dir(role), err)
	}
	z.mu.Lock()
	old := z.view[role]
	z.mu.Unlock() // only this goroutine writes the view
	next := make(map[string]Node, len(names))
	for _, name := range names {
		if n, ok := old[name]; ok && !full {
			next[name] = n
			continue
		}
		n, found, err := s.read(role, name)
		if err != nil {
			return err
		}
		if found {
			next[name] = n
		}
	}
	z.mu.Lock()
	if !reflect.DeepEqual(old, next) {
		z.view[role] = next
		z.notifyLocked()
	}
	z.mu.Unlock()
	return nil
}

// read fetches one registration and arms its data watch.
func (s *session) read(role Role, addr string) (Node, bool, error) {
	p := s.z.paths.node(role, addr)
	data, _, _, err := s.conn.GetW(p)
	if errors.Is(err, zk.ErrNoNode) {
		return Node{}, false, nil
	}
	if err != nil {
		return Node{}, false, fmt.Errorf("read %s: %w", p, err)
	}
	n, err := s.z.decodeNode(role, addr, data)
	if err != nil {
		s.z.ignoreNode(p, err)
		return Node{}, false, nil
	}
	return n, true, nil
}

// loadLeader finds the lowest election node and arms the children watch.
func (s *session) loadLeader() error {
	z := s.z
	names, _, _, err := s.conn.ChildrenW(z.paths.election)
	if err != nil {
		return fmt.Errorf("list %s: %w", z.paths.election, err)
	}
	id, epoch := "", int64(0)
	if sorted := sortBySeq(names); len(sorted) > 0 {
		data, _, err := s.conn.Get(z.paths.election + "/" + sorted[0])
		switch {
		case errors.Is(err, zk.ErrNoNode): // going away; the children watch fires again
		case err != nil:
			return err
		default:
			var d electionData
			if err := json.Unmarshal(data, &d); err == nil {
				id, epoch = d.ID, seqOf(sorted[0])+1
			}
		}
	}
	z.mu.Lock()
	if z.leaderID != id || z.leaderEp != epoch {
		z.leaderID, z.leaderEp = id, epoch
		z.notifyLocked()
	}
	z.mu.Unlock()
	return nil
}

func (z *ZK) setNode(role Role, addr string, n Node, found bool) {
	z.mu.Lock()
	defer z.mu.Unlock()
	old, had := z.view[role][addr]
	switch {
	case found && (!had || !reflect.DeepEqual(old, n)):
		next := make(map[string]Node, len(z.view[role])+1) // copy: loadRole reads the old map unlocked
		for k, v := range z.view[role] {
			next[k] = v
		}
		next[addr] = n
		z.view[role] = next
	case !found && had:
		next := make(map[string]Node, len(z.view[role]))
		for k, v := range z.view[role] {
			if k != addr {
				next[k] = v
			}
		}
		z.view[role] = next
	default:
		return
	}
	z.notifyLocked()
}

// dial connects for the client library. While no session was ever made it
// backs off (ZooKeeper is not there yet) and logs every few attempts; the
// library itself pauses a second after each round of servers. Once there
// is a session it redials quickly (redialWait, pacedHosts) and bounds the
// handshake (handshakeLimit): the session may still be alive.
func (s *session) dial(ctx context.Context) zk.Dialer {
	return func(network, addr string, timeout time.Duration) (net.Conn, error) {
		if s.closing.Load() {
			return nil, zk.ErrClosing
		}
		n := s.attempts.Add(1)
		reconnect := s.hadSession.Load()
		pause := time.Duration(0)
		switch {
		case reconnect:
			pause = redialWait(n, time.Since(s.base)-time.Duration(s.lastDial.Load()))
		case n > 1:
			pause = min(100*time.Millisecond<<min(n-2, 5), 2*time.Second)
		}
		if pause > 0 && !wait(ctx, pause) {
			return nil, ctx.Err()
		}
		s.lastDial.Store(int64(time.Since(s.base)))
		c, err := net.DialTimeout(network, addr, timeout)
		switch {
		case err != nil && (n == 1 || n%5 == 0):
			s.z.log.Warn("zookeeper unreachable, retrying", zap.String("server", addr), zap.Int64("attempt", n), zap.Error(err))
		case err == nil && n%5 == 0:
			s.z.log.Warn("zookeeper accepts connections but gives no session (no quorum?), retrying",
				zap.String("server", addr), zap.Int64("attempt", n))
		}
		if err != nil {
			return nil, err
		}
		hc := &heardConn{Conn: c, s: s, hs: connectResponse{len: -1}}
		c = hc
		if reconnect { // see gatedConn
			raw, limit := hc.Conn, handshakeLimit(s.z.cfg.SessionTimeout)
			hc.limit = time.AfterFunc(limit, func() {
				s.z.log.Debug("zookeeper handshake not answered in time; dialing again", zap.Duration("limit", limit))
				raw.Close()
			})
			c = newGatedConn(c)
		}
		s.netMu.Lock()
		s.lastNet, s.live = c, hc
		s.netMu.Unlock()
		return c, nil
	}
}

// keepAlive has the server hear from this client every interval (see
// keepAliveEvery) while it is connected.
func (s *session) keepAlive(ctx context.Context, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		s.netMu.Lock()
		c := s.live
		s.netMu.Unlock()
		if c != nil {
			c.ping()
		}
	}
}

// heardConn records when the server was last heard from (untilExpiry),
// cuts a reconnect's handshake at its limit, and writes keepAlive's pings
// between the client's packets.
type heardConn struct {
	net.Conn
	s     *session
	limit *time.Timer // a reconnect's: closes the socket if the handshake is not answered
	hs    connectResponse
	open  atomic.Bool // the connect response was read: pings may go
	wmu   sync.Mutex  // one packet per Write, from the client or ping
}

// pingPacket is a ZooKeeper ping: length 8, xid -2, opcode 11. The client
// library ignores the answers, which only feed heard.
var pingPacket = []byte{0, 0, 0, 8, 0xff, 0xff, 0xff, 0xfe, 0, 0, 0, 11}

func (c *heardConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n > 0 {
		c.s.heard.Store(int64(time.Since(c.s.base)))
		if c.hs.consume(b[:n]) && c.hs.done {
			if c.limit != nil {
				c.limit.Stop()
			}
			c.open.Store(true)
		}
	}
	return n, err
}

func (c *heardConn) Write(b []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.Conn.Write(b)
}

// ping writes one ping once the session is open on this connection. A
// failed write is the client's to notice on its own next read or write.
func (c *heardConn) ping() {
	if !c.open.Load() {
		return
	}
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, _ = c.Conn.Write(pingPacket)
}

// eventQueue takes client events without ever blocking the client (its
// callback must not block, and its own event channel drops when full).
type eventQueue struct {
	mu     sync.Mutex
	evs    []zk.Event
	signal chan struct{} // buffered 1
}

func (q *eventQueue) push(ev zk.Event) {
	q.mu.Lock()
	q.evs = append(q.evs, ev)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

func (q *eventQueue) drain() []zk.Event {
	q.mu.Lock()
	defer q.mu.Unlock()
	evs := q.evs
	q.evs = nil
	return evs
}

// clientLogger sends the client library's chatter to debug level; the
// registry logs what matters itself.
type clientLogger struct{ log *zap.Logger }

func (l clientLogger) Printf(format string, args ...interface{}) {
	l.log.Debug(fmt.Sprintf(format, args...))
}

func sid(id int64) string { return fmt.Sprintf("0x%x", id) }

func timerC(t *time.Timer) <-chan time.Time {
	if t == nil {
		return nil
	}
	return t.C
}

func stopTimer(t *time.Timer) {
	if t != nil {
		t.Stop()
	}
}

// wait sleeps for d unless ctx ends first; it reports whether d elapsed.
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
