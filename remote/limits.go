package remote

import (
	"errors"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/remote/frame"
	"github.com/beluga-scheduler/beluga/remote/message"
)

// Limits bound what peers may cost a Server (docs/architecture.md, Wire
// protocol). Zero values pick the defaults below; a negative value turns
// that limit off.
type Limits struct {
	// IdleTimeout closes a connection that sent nothing for this long, and
	// one whose frame in progress started this long ago.
	IdleTimeout time.Duration
	// HandshakeTimeout closes a connection not yet authenticated after this
	// long. Until a handshake exists, the first valid frame authenticates.
	HandshakeTimeout time.Duration
	// MaxConnsPerPeer caps the open connections from one peer IP address.
	MaxConnsPerPeer int
	// MaxBuffered caps the bytes of partly received frames held across all
	// of the server's connections; a connection that would pass it is closed.
	MaxBuffered int
}

// Defaults of Limits.
const (
	DefaultIdleTimeout      = 10 * time.Minute
	DefaultHandshakeTimeout = 10 * time.Second
	DefaultMaxConnsPerPeer  = 64
	DefaultMaxBuffered      = 128 << 20
)

func (l Limits) withDefaults() Limits {
	if l.IdleTimeout == 0 {
		l.IdleTimeout = DefaultIdleTimeout
	}
	if l.HandshakeTimeout == 0 {
		l.HandshakeTimeout = DefaultHandshakeTimeout
	}
	if l.MaxConnsPerPeer == 0 {
		l.MaxConnsPerPeer = DefaultMaxConnsPerPeer
	}
	if l.MaxBuffered == 0 {
		l.MaxBuffered = DefaultMaxBuffered
	}
	return l
}

// errBudget: taking more bytes would pass Limits.MaxBuffered.
var errBudget = errors.New("server-wide buffer for partial frames is full")

// budget counts the bytes of partial frames held by all connections of one
// Server or Client. Connections run on several event loops, hence atomic.
type budget struct {
	limit int64 // <= 0: unlimited
	used  atomic.Int64
}

func (b *budget) take(n int) bool {
	if b.used.Add(int64(n)) > b.limit && b.limit > 0 {
		b.used.Add(int64(-n))
		return false
	}
	return true
}

func (b *budget) give(n int) { b.used.Add(int64(-n)) }

// buffer appends data to the connection's frame in progress (c.in) and
// returns how many bytes of data it took: no more than that frame still
// needs. c.in grows with what arrives (not with what the header announces),
// so a peer holds at most about twice what it really sent, and never more
// than its frame type's limit. Runs on the event loop.
func (e *events) buffer(c *conn, data []byte) (int, error) {
	want := frame.HeaderSize
	if len(c.in) >= frame.HeaderSize {
		total, err := frame.Size(c.in, e.maxBody)
		if err != nil {
			return 0, err
		}
		want = total
	}
	take := min(want-len(c.in), len(data))
	if need := len(c.in) + take; need > cap(c.in) {
		newCap := min(max(2*cap(c.in), need, 4<<10), max(want, frame.HeaderSize))
		if !e.budget.take(newCap - cap(c.in)) {
			return 0, errBudget
		}
		grown := make([]byte, len(c.in), newCap)
		copy(grown, c.in)
		c.in = grown
	}
	if len(c.in) == 0 {
		c.partialSince.Store(time.Now().UnixNano())
	}
	c.in = append(c.in, data[:take]...)
	if len(c.in) == frame.HeaderSize {
		if _, err := frame.Size(c.in, e.maxBody); err != nil {
			return 0, err // refuse at the header, before any body
		}
	}
	return take, nil
}

// releaseBuffer drops the frame in progress. Runs on the event loop, when a
// frame completes or the connection closes.
func (e *events) releaseBuffer(c *conn) {
	if c.in != nil {
		e.budget.give(cap(c.in))
		c.in = nil
	}
	c.partialSince.Store(0)
}

// frameComplete reports whether c.in holds a whole frame.
func frameComplete(in []byte, maxBody int) bool {
	total, err := frame.Size(in, maxBody)
	return err == nil && total > 0 && len(in) == total
}

// authenticated is called for each valid inbound frame before it reaches a
// handler. Without a handshake, the first valid frame ends the handshake
// window. A handshake takes this over: it marks the conn with
// c.authed.Store(true) once the peer proved itself.
func (e *events) authenticated(c *conn, _ message.Message) bool {
	if e.auth != nil {
		return false // only the handshake (auth.go) authenticates
	}
	c.authed.Store(true) // an open transport: any valid frame counts
	return true
}

// peerTable counts open server connections per peer IP and keeps the set
// of connections the sweeper checks. Its mutex is taken once per accept,
// close and sweep, never per frame.
type peerTable struct {
	mu    sync.Mutex
	max   int // <= 0: unlimited
	count map[string]int
	conns map[*conn]struct{}
}

func newPeerTable(max int) *peerTable {
	return &peerTable{max: max, count: map[string]int{}, conns: map[*conn]struct{}{}}
}

// admit counts one more connection from ip; false (and nothing counted)
// when ip is at the cap.
func (p *peerTable) admit(ip string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.max > 0 && p.count[ip] >= p.max {
		return false
	}
	p.count[ip]++
	return true
}

func (p *peerTable) release(ip string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.count[ip]--; p.count[ip] <= 0 {
		delete(p.count, ip)
	}
}

func (p *peerTable) add(c *conn) {
	p.mu.Lock()
	p.conns[c] = struct{}{}
	p.mu.Unlock()
}

func (p *peerTable) remove(c *conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
}

func (p *peerTable) snapshot() []*conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]*conn, 0, len(p.conns))
	for c := range p.conns {
		out = append(out, c)
	}
	return out
}

// peerIP is the address part of a "host:port" remote address.
func peerIP(addr net.Addr) string {
	if ta, ok := addr.(*net.TCPAddr); ok {
		return ta.IP.String()
	}
	host, _, err := net.SplitHostPort(addr.String())
	if err != nil {
		return addr.String()
	}
	return host
}

// whyHandshake is expiry's reason for a connection not authenticated in
// time.
const whyHandshake = "not authenticated in time"

// expiry says why a connection has outlived its limits at now, or "" while
// it has not. Times are unix nanoseconds; 0 means unset.
func expiry(l Limits, now, opened, lastRecv, partialSince int64, authed bool) string {
	switch {
	case l.HandshakeTimeout > 0 && !authed && now-opened >= int64(l.HandshakeTimeout):
		return whyHandshake
	case l.IdleTimeout > 0 && now-lastRecv >= int64(l.IdleTimeout):
		return "idle"
	case l.IdleTimeout > 0 && partialSince != 0 && now-partialSince >= int64(l.IdleTimeout):
		return "frame not completed in time"
	}
	return ""
}

// sweepEvery is how often the sweeper looks at connections: a quarter of
// the shortest timeout, between 10ms and 1s.
func sweepEvery(l Limits) time.Duration {
	d := time.Second
	for _, t := range []time.Duration{l.IdleTimeout, l.HandshakeTimeout} {
		if t > 0 {
			d = min(d, t/4)
		}
	}
	return max(d, 10*time.Millisecond)
}

// sweep closes the connections that outlived their limits, until stop.
func (s *Server) sweep(stop <-chan struct{}) {
	t := time.NewTicker(sweepEvery(s.limits))
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			s.checkEngine(now)
			for _, c := range s.peers.snapshot() {
				why := expiry(s.limits, now.UnixNano(), c.opened, c.lastRecv.Load(), c.partialSince.Load(), c.authed.Load())
				if why == "" {
					continue
				}
				switch {
				case why == "idle":
					s.log.Debug("closing idle connection", zap.String("remote", c.remote))
				case why == whyHandshake && s.ev.auth != nil:
					c.hsExpired.Store(true) // the handshake logs its end (auth.go)
				default:
					if n, ok := s.expiredLog.allow(now); ok {
						s.log.Warn("closing connection", zap.String("remote", c.remote), zap.String("reason", why),
							zap.Int("suppressed_since_last", n))
					}
				}
				c.close()
			}
		}
	}
}

// acceptBackoff is the wait after an accept error that followed prev
// (0 after a success): 5ms doubling up to 1s, as net/http does.
func acceptBackoff(prev time.Duration) time.Duration {
	if prev == 0 {
		return 5 * time.Millisecond
	}
	return min(2*prev, time.Second)
}
