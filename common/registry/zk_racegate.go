package registry

import (
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// gatedConn works around a data race in go-zookeeper v1.0.4 (its latest
// release; upstream pull request go-zookeeper/zk#35 is unmerged). After a
// reconnect within a session, the client's connection goroutine reads
// Conn.lastZxid to build the setWatches request that re-arms its watches,
// while the receive goroutine it has just started may already write
// lastZxid for the first response. Benign on 64-bit machines, but it fails
// every -race test that restarts ZooKeeper.
//
// The setWatches packet is written by a goroutine the reader started after
// reading, so holding back what the new connection delivers until that
// packet has been written orders the read before every write. Only
// connections made after the client had a session are gated (before, it
// has no watches to re-send). A client without watches sends no setWatches
// and reads nothing; the gate then opens after gateWait.
type gatedConn struct {
	net.Conn
	writes   atomic.Int64
	open     chan struct{}
	openOnce sync.Once

	// The connect response is read before the receive goroutine starts,
	// and is never held back.
	hs connectResponse
}

const (
	opSetWatches = 101 // go-zookeeper's opcode for setWatches
	gateWait     = 200 * time.Millisecond
)

func newGatedConn(c net.Conn) *gatedConn {
	return &gatedConn{Conn: c, open: make(chan struct{}), hs: connectResponse{len: -1}}
}

func (c *gatedConn) openGate() { c.openOnce.Do(func() { close(c.open) }) }

// Write opens the gate on the first setWatches packet. The client writes
// one packet per call: length, xid, opcode. The first write is the connect
// request, which has no opcode.
func (c *gatedConn) Write(b []byte) (int, error) {
	if c.writes.Add(1) > 1 && len(b) >= 12 && int32(binary.BigEndian.Uint32(b[8:12])) == opSetWatches {
		c.openGate()
	}
	return c.Conn.Write(b)
}

// Read delivers the handshake at once and anything after it once the gate
// is open. The network read itself is not delayed, so deadlines and Close
// work as before.
func (c *gatedConn) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	if n == 0 || c.hs.consume(b[:n]) {
		return n, err
	}
	select {
	case <-c.open:
	default:
		t := time.NewTimer(gateWait)
		select {
		case <-c.open:
		case <-t.C:
			c.openGate()
		}
		t.Stop()
	}
	return n, err
}

// connectResponse follows the connect response (4-byte length, then the
// body) through a connection's reads. Only the client's reads touch it,
// and they are sequential.
type connectResponse struct {
	hdr  []byte
	len  int // body length once known, else -1
	seen int
	done bool
}

// consume reports whether p, the next bytes read, is (part of) the
// connect response.
func (r *connectResponse) consume(p []byte) bool {
	if r.done {
		return false
	}
	for i := 0; i < len(p) && len(r.hdr) < 4; i++ {
		r.hdr = append(r.hdr, p[i])
	}
	if r.len < 0 && len(r.hdr) == 4 {
		r.len = int(binary.BigEndian.Uint32(r.hdr))
	}
	r.seen += len(p)
	if r.len >= 0 && r.seen >= 4+r.len {
		r.done = true
	}
	return true
}
