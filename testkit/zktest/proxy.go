package zktest

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"
)

// Proxy relays TCP between clients and one server (any TCP server: the
// soak puts one on each link of a process), and can be cut to
// simulate a network partition. Unlike killing or pausing the server, a cut
// leaves ZooKeeper running: it stops hearing from the clients behind the
// proxy and expires their sessions after the session timeout, while other
// clients keep working. That makes session expiry deterministic to test.
type Proxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup // accept loop and pumps

	mu     sync.Mutex
	cut    bool
	delay  time.Duration // added before each chunk is relayed, either way
	closed bool
	conns  map[net.Conn]struct{}
}

// NewProxy starts a proxy to target for the test and closes it when the
// test ends.
func NewProxy(t testing.TB, target string) *Proxy {
	t.Helper()
	p, err := StartProxy(target)
	if err != nil {
		t.Fatalf("zktest: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// StartProxy is NewProxy without testing.TB.
func StartProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("proxy listen: %w", err)
	}
	p := &Proxy{ln: ln, target: target, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is where clients connect.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Partition turns the proxy into a black hole: connections stay open (new
// ones are accepted too) but every byte either way is dropped, as when a
// network path dies without resets.
func (p *Proxy) Partition() {
	p.mu.Lock()
	p.cut = true
	p.mu.Unlock()
}

// Heal ends a partition. Connections opened before are closed so clients
// notice at once and reconnect through a clean path.
func (p *Proxy) Heal() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
	p.Drop()
}

// Resume ends a partition and leaves the connections as they are, as when
// a dead path comes back by itself: what was sent during the cut is lost,
// and a client waiting for an answer to it waits on until its own timeout.
func (p *Proxy) Resume() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

// Drop closes every connection through the proxy now, as when the path
// goes away with resets: clients notice at once (a Partition alone leaves
// them waiting for their read timeouts). New connections are still
// accepted, and cut if the proxy is.
func (p *Proxy) Drop() {
	p.mu.Lock()
	for c := range p.conns {
		c.Close()
	}
	p.mu.Unlock()
}

// SetDelay makes the link slow: every chunk read from either side is
// relayed d later (0 ends it), so a request and its answer each take d
// more, as over a congested or distant link.
func (p *Proxy) SetDelay(d time.Duration) {
	p.mu.Lock()
	p.delay = d
	p.mu.Unlock()
}

// Close stops the proxy and every connection through it, and waits for its
// goroutines. Safe to call twice.
func (p *Proxy) Close() {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		p.ln.Close()
		for c := range p.conns {
			c.Close()
		}
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			return // closed
		}
		server, err := net.Dial("tcp", p.target)
		if err != nil {
			client.Close() // server down: the client sees a reset, as without a proxy
			continue
		}
		if !p.track(client, server) {
			return
		}
		p.wg.Add(2)
		go p.pump(server, client)
		go p.pump(client, server)
	}
}

func (p *Proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range conns {
			c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *Proxy) state() (cut bool, delay time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cut, p.delay
}

// pump copies src to dst unless the proxy is cut; when either side ends,
// both are closed.
func (p *Proxy) pump(dst, src net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		cut, delay := p.state()
		if n > 0 && delay > 0 {
			time.Sleep(delay) // the latency being injected
			cut, _ = p.state()
		}
		if n > 0 && !cut {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	src.Close()
	dst.Close()
	p.mu.Lock()
	delete(p.conns, src)
	delete(p.conns, dst)
	p.mu.Unlock()
}
