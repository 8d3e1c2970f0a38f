package remote

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/panjf2000/gnet/v2"

	"github.com/beluga-scheduler/beluga/remote/message"
)

// maxQueued caps the messages waiting for a connection's handler. The event
// loop cannot push back on a peer, so a peer that outruns its handler this
// far is cut off instead of growing memory without bound.
const maxQueued = 1 << 16

type inbound struct {
	reqID uint64
	m     message.Message
}

// conn is one TCP connection seen from either side. It is the Peer handed to
// handlers. The event loop opens and closes it and feeds its queue; one
// goroutine (serve) runs the handler; any goroutine may write.
type conn struct {
	gc     gnet.Conn // set in OnOpen, before any other goroutine sees the conn
	remote string
	peerIP string // server conns: the peer's IP, counted in peerTable

	// Limits (limits.go). in is the frame in progress, owned by the event
	// loop; the times are unix nanoseconds, read by the sweeper.
	in           []byte
	opened       int64 // set in OnOpen
	lastRecv     atomic.Int64
	partialSince atomic.Int64 // when the frame in progress began; 0: none

	// mu orders writes against close: gnet must not be called for a conn the
	// event loop has let go of (its poller may be gone after engine stop), so
	// writers hold the read lock across AsyncWrite and OnClose takes the
	// write lock to set closed. AsyncWrite only enqueues, so OnClose never
	// waits on the network.
	mu      sync.RWMutex
	closed  bool
	done    chan struct{} // closed by OnClose
	maxBody int

	// The write queue (see write): frames wait in out until the event loop
	// flushes them all with one write. flushing is true from the moment a
	// flush is scheduled until it took out; flushed is closed (and
	// replaced) by each flush, for writers waiting on a full queue.
	wmu      sync.Mutex
	out      []byte
	spareOut []byte // the buffer of the last flush, reused (event loop only)
	flushing bool
	flushed  chan struct{}

	// pending maps request ids to waiting Client.Request calls (client conns).
	pmu     sync.Mutex
	pending map[uint64]chan message.Message

	// The handler queue: the event loop appends, serve takes the whole slice.
	qmu        sync.Mutex
	queue      []inbound
	queueLimit int           // set in OnOpen
	shut       bool          // no more messages will come
	wake       chan struct{} // cap 1: queue changed

	// Authentication (auth.go): hs is the handshake in progress (event
	// loop only); peer is set before authed turns true; authDone (client
	// conns with auth) is closed then.
	hs       *handshake
	peer     Identity
	authed   atomic.Bool
	authDone chan struct{}
	// hsExpired: the sweeper closed it for not authenticating in time.
	hsExpired atomic.Bool
}

func newConn(remote string, maxBody int, client bool) *conn {
	c := &conn{
		remote:  remote,
		done:    make(chan struct{}),
		maxBody: maxBody,
		wake:    make(chan struct{}, 1),
	}
	if client {
		c.pending = make(map[uint64]chan message.Message)
	}
	return c
}

// RemoteAddr is the peer address (for a client conn: the address dialled).
func (c *conn) RemoteAddr() string { return c.remote }

// Send implements Peer.
func (c *conn) Send(reqID uint64, m message.Message) error {
	buf, err := encodeFrame(reqID, m, c.maxBody)
	if err != nil {
		return err
	}
	return c.write(context.Background(), buf)
}

// maxOut caps the bytes queued for one connection's event loop; a writer
// past it waits for the next flush, so a peer that stops reading slows its
// senders instead of growing memory without bound.
const maxOut = 4 << 20

// keepOut is the largest flush buffer kept for reuse.
const keepOut = 64 << 10

// write queues buf for the socket and returns: it does not wait for the
// write itself. Frames queued while a flush is pending leave together in one
// write (a batch of DB-acks, the reply to a dispatch and the ack that
// follows it), which spares a wake-up of the event loop and a system call
// per frame. A frame queued before the connection closes may be lost with
// it, as one in the socket's buffer may: every message that matters is
// either a request (its reply is awaited) or re-sent until answered.
// The error is ErrClosed for a closed connection, or ctx's when ctx ends
// while the queue is full.
func (c *conn) write(ctx context.Context, buf []byte) error {
	for {
		c.mu.RLock()
		if c.closed {
			c.mu.RUnlock()
			return fmt.Errorf("send to %s: %w", c.remote, ErrClosed)
		}
		c.wmu.Lock()
		if len(c.out) > 0 && len(c.out)+len(buf) > maxOut {
			if c.flushed == nil {
				c.flushed = make(chan struct{})
			}
			wait := c.flushed
			c.wmu.Unlock()
			c.mu.RUnlock()
			select {
			case <-wait:
				continue
			case <-c.done:
				return fmt.Errorf("send to %s: %w", c.remote, ErrClosed)
			case <-ctx.Done():
				return fmt.Errorf("send to %s: %w", c.remote, ctx.Err())
			}
		}
		c.out = append(c.out, buf...)
		schedule := !c.flushing
		c.flushing = true
		c.wmu.Unlock()
		var err error
		if schedule {
			// A writev of nothing is no system call: the callback, on the
			// event loop, writes the whole queue.
			err = c.gc.AsyncWritev(nil, c.flush)
		}
		c.mu.RUnlock()
		if err != nil {
			return fmt.Errorf("send to %s: %w", c.remote, err)
		}
		return nil
	}
}

// flush writes every queued frame with one write; it runs on the event loop.
// gnet copies what the socket does not take at once into its own buffer, so
// the queue's buffer is free again when Write returns.
func (c *conn) flush(gc gnet.Conn, err error) error {
	c.wmu.Lock()
	batch := c.out
	c.out = c.spareOut[:0]
	c.spareOut = nil
	c.flushing = false
	if c.flushed != nil {
		close(c.flushed)
		c.flushed = nil
	}
	c.wmu.Unlock()
	if err == nil && len(batch) > 0 {
		_, err = gc.Write(batch) // an error closes the connection (gnet)
	}
	if cap(batch) <= keepOut {
		c.wmu.Lock()
		c.spareOut = batch[:0]
		c.wmu.Unlock()
	}
	return nil
}

// close asks the event loop to close the connection; OnClose follows.
func (c *conn) close() {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if !c.closed {
		_ = c.gc.Close() // fails only if the loop is gone, which closes it anyway
	}
}

func (c *conn) isClosed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// markClosed runs on the event loop in OnClose.
func (c *conn) markClosed() {
	c.mu.Lock()
	c.closed = true
	close(c.done) // wakes Request waiters and writers
	c.mu.Unlock()

	c.qmu.Lock()
	c.shut = true
	c.qmu.Unlock()
	c.signal()
}

// expect registers a waiter for the reply to id; nil if the conn is closed.
func (c *conn) expect(id uint64) chan message.Message {
	ch := make(chan message.Message, 1)
	c.pmu.Lock()
	defer c.pmu.Unlock()
	if c.isClosed() {
		return nil
	}
	c.pending[id] = ch
	return ch
}

func (c *conn) unexpect(id uint64) {
	c.pmu.Lock()
	delete(c.pending, id)
	c.pmu.Unlock()
}

// deliver hands a reply to its waiting Request; false if nobody waits. It
// runs on the event loop and never blocks: each waiter channel has room for
// its one reply and is removed from the map on delivery.
func (c *conn) deliver(id uint64, m message.Message) bool {
	if c.pending == nil || id == 0 {
		return false
	}
	c.pmu.Lock()
	ch, ok := c.pending[id]
	delete(c.pending, id)
	c.pmu.Unlock()
	if ok {
		ch <- m
	}
	return ok
}

// enqueue queues a message for the handler; false when the queue is full.
// It runs on the event loop.
func (c *conn) enqueue(in inbound) bool {
	c.qmu.Lock()
	if len(c.queue) >= c.queueLimit {
		c.qmu.Unlock()
		return false
	}
	c.queue = append(c.queue, in)
	c.qmu.Unlock()
	c.signal()
	return true
}

func (c *conn) signal() {
	select {
	case c.wake <- struct{}{}:
	default:
	}
}

// serve runs h for each queued message in order. After the conn closes it
// drains what was received and returns; when ctx ends (Stop) it drops the
// rest and returns.
func (c *conn) serve(ctx context.Context, h Handler) {
	var spare []inbound // double buffer: the loop fills one slice while we run the other
	for {
		c.qmu.Lock()
		batch, shut := c.queue, c.shut
		c.queue = spare[:0]
		c.qmu.Unlock()

		for i := range batch {
			if ctx.Err() != nil {
				return
			}
			h(c, batch[i].reqID, batch[i].m)
			batch[i] = inbound{} // let the message be collected
		}
		spare = batch

		if len(batch) == 0 {
			if shut {
				return
			}
			select {
			case <-c.wake:
			case <-ctx.Done():
				return
			}
		}
	}
}
