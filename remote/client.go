package remote

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"
	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/internal/startstop"

	"github.com/beluga-scheduler/beluga/remote/message"
)

// Client dials peers, caches one connection per address, and correlates
// replies with requests. Frames that are not replies go to its Handler.
type Client struct {
	o   Options
	ev  *events
	log *zap.Logger
	seq atomic.Uint64 // last request id; ids start at 1, 0 means push

	life startstop.Base // Start once; owns the stopper goroutine

	mu         sync.Mutex
	state      int // under mu: sends and dials are refused unless stateStarted
	cli        *gnet.Client
	conns      map[string]*link
	dials      sync.WaitGroup // dials in flight; Stop waits before stopping the engine
	pumps      sync.WaitGroup // TLS bridges' copies (tls.go); they end with the engine's conns
	dialCtx    context.Context
	cancelDial context.CancelFunc
}

// link is the cache entry for one address. Callers that find a link still
// dialling wait on ready instead of dialling again.
type link struct {
	ready chan struct{} // closed once c or err is set
	c     *conn
	err   error
}

// NewClient returns a client; h receives frames that are not replies to a
// pending Request (h may be nil: such frames are then dropped).
func NewClient(h Handler, o Options) *Client {
	o = o.withDefaults()
	o.Limits = o.Limits.withDefaults()
	c := &Client{
		o:     o,
		log:   o.Log.Named("remote.client"),
		conns: make(map[string]*link),
	}
	c.life.Name, c.life.Log = "remote client", c.log
	c.ev = newEvents(h, Options{MaxBody: o.MaxBody, Log: c.log, Auth: o.Auth}, true)
	c.ev.onClose = c.dropClosed
	c.dialCtx, c.cancelDial = context.WithCancel(context.Background())
	return c
}

// Start starts the client's event loops. A stopped client cannot be started
// again (ErrStopped), nor a client started twice.
func (c *Client) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := c.life.StartWith(context.WithoutCancel(ctx), c.start, nil)
	if errors.Is(err, startstop.ErrStopped) {
		return ErrStopped
	}
	return err
}

func (c *Client) start() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	cli, err := gnet.NewClient(c.ev,
		gnet.WithMulticore(true),
		gnet.WithTCPKeepAlive(30*time.Second),
		gnet.WithLogger(gnetLogger(c.log)))
	if err != nil {
		return fmt.Errorf("remote client: %w", err)
	}
	if err := cli.Start(); err != nil {
		return fmt.Errorf("remote client: %w", err)
	}
	c.cli = cli
	c.state = stateStarted
	c.life.Go(c.stopper)
	return nil
}

// Stop closes every connection and waits for the gnet engine and all handler
// goroutines to exit. Safe to call twice, concurrently, or before Start.
//
// Shutdown order: refuse new sends and dials; cancel dials in flight and wait
// for them, so none registers with a stopping engine; stop the engine (every
// conn closes, so pending Requests and writes fail with ErrClosed); cancel
// the handler context and wait for handler goroutines.
//
// Stop gives up, logging it, at startstop.DefaultStopTimeout.
func (c *Client) Stop() { _ = c.life.Stop(nil) }

// stopper does Stop's work, in the order above, once Stop ends ctx.
func (c *Client) stopper(ctx context.Context) {
	<-ctx.Done()
	c.mu.Lock()
	c.state = stateStopped
	c.mu.Unlock()
	c.cancelDial()
	c.dials.Wait()
	if err := c.cli.Stop(); err != nil {
		c.log.Warn("stopping gnet client", zap.Error(err))
	}
	c.pumps.Wait()
	c.ev.cancel()
	c.ev.wg.Wait()
}

// Send pushes m (request id 0) to addr over the cached connection, dialling
// it on first use or after it broke. It returns once the frame is queued for
// the socket; an error means addr is unreachable or the connection closed,
// so the caller can try another peer.
func (c *Client) Send(ctx context.Context, addr string, m message.Message) error {
	buf, err := encodeFrame(0, m, c.o.MaxBody)
	if err != nil {
		return err
	}
	cn, err := c.conn(ctx, addr)
	if err != nil {
		return err
	}
	return cn.write(ctx, buf)
}

// Request sends m and waits for the frame with the same request id, until
// ctx ends (or Options.RequestTimeout when ctx has no deadline) or the
// connection closes. A message.Error reply is returned as a *RemoteError.
func (c *Client) Request(ctx context.Context, addr string, m message.Message) (message.Message, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, c.o.RequestTimeout)
		defer cancel()
	}
	id := c.seq.Add(1)
	buf, err := encodeFrame(id, m, c.o.MaxBody)
	if err != nil {
		return nil, err
	}
	cn, err := c.conn(ctx, addr)
	if err != nil {
		return nil, err
	}
	reply := cn.expect(id)
	if reply == nil {
		return nil, fmt.Errorf("request %T to %s: %w", m, addr, ErrClosed)
	}
	defer cn.unexpect(id)
	if err := cn.write(ctx, buf); err != nil {
		return nil, fmt.Errorf("request %T: %w", m, err)
	}
	var r message.Message
	select {
	case r = <-reply:
	case <-cn.done:
		select { // the reply may have come just before the close
		case r = <-reply:
		default:
			return nil, fmt.Errorf("request %T to %s: %w", m, addr, ErrClosed)
		}
	case <-ctx.Done():
		return nil, fmt.Errorf("request %T to %s: %w", m, addr, ctx.Err())
	}
	if e, ok := r.(message.Error); ok {
		return nil, &RemoteError{Addr: addr, Code: e.Code, Message: e.Message}
	}
	return r, nil
}

// Forget closes and drops the cached connection to addr, if any. A dial to
// addr in flight is closed when it completes.
func (c *Client) Forget(addr string) {
	c.mu.Lock()
	l := c.conns[addr]
	delete(c.conns, addr)
	c.mu.Unlock()
	if l == nil {
		return
	}
	select {
	case <-l.ready:
		if l.c != nil {
			l.c.close()
		}
	default: // the dialler sees the link is gone and closes its conn
	}
}

// conn returns the open connection to addr, dialling if needed. Concurrent
// callers share one dial.
func (c *Client) conn(ctx context.Context, addr string) (*conn, error) {
	for {
		c.mu.Lock()
		if c.state != stateStarted {
			c.mu.Unlock()
			return nil, fmt.Errorf("send to %s: %w", addr, ErrStopped)
		}
		l := c.conns[addr]
		dialled := l == nil
		if dialled {
			l = &link{ready: make(chan struct{})}
			c.conns[addr] = l
			c.dials.Add(1)
			c.mu.Unlock()
			c.dial(addr, l)
		} else {
			c.mu.Unlock()
		}

		select {
		case <-l.ready:
		case <-ctx.Done():
			return nil, fmt.Errorf("connect to %s: %w", addr, ctx.Err())
		}
		if l.err != nil {
			return nil, l.err
		}
		if !l.c.isClosed() {
			return l.c, nil
		}
		if dialled { // the peer closed a fresh connection: do not spin on it
			return nil, fmt.Errorf("connect to %s: %w", addr, ErrClosed)
		}
		// Closed after it was cached (dropClosed may not have run yet): redial.
		c.mu.Lock()
		if c.conns[addr] == l {
			delete(c.conns, addr)
		}
		c.mu.Unlock()
	}
}

// dial connects l to addr. The dial runs under the client's lifetime (not the
// caller's ctx) because other callers may be waiting on the same link.
func (c *Client) dial(addr string, l *link) {
	defer c.dials.Done()
	defer close(l.ready)
	ctx, cancel := context.WithTimeout(c.dialCtx, c.o.DialTimeout)
	defer cancel()

	var d net.Dialer
	reach := addr
	if r, ok := c.o.Routes[addr]; ok {
		reach = r
	}
	nc, err := d.DialContext(ctx, "tcp", reach)
	var br *bridge // TLS: the plaintext is nc's, carried by br
	if err == nil && c.o.TLS != nil {
		nc, br, err = dialTLS(ctx, c.o.TLS, nc, addr)
	}
	if err == nil {
		cn := newConn(addr, c.o.MaxBody, true)
		if c.o.Auth != nil {
			cn.authDone = make(chan struct{})
		}
		// EnrollContext hands a duplicate of the socket to gnet and closes nc.
		if _, err = c.cli.EnrollContext(nc, cn); err == nil && cn.gc == nil {
			err = ErrClosed // gnet could not register it: OnOpen never ran
		}
		if br != nil {
			if err != nil {
				br.close()
			} else {
				br.start(&c.pumps)
			}
		}
		if err == nil {
			err = c.awaitAuth(cn)
		}
		if err == nil {
			l.c = cn
		}
	}

	c.mu.Lock()
	current := c.conns[addr] == l
	if err != nil && current {
		delete(c.conns, addr) // the next call dials again
	}
	c.mu.Unlock()
	if err != nil {
		l.err = fmt.Errorf("connect to %s: %w", addr, err)
		c.log.Debug("dial failed", zap.String("addr", addr), zap.Error(err))
		return
	}
	if !current { // Forget ran while dialling
		l.c.close()
	}
}

// awaitAuth waits for cn's handshake, up to Limits.HandshakeTimeout from
// now (the connect before it has the dial timeout of its own).
func (c *Client) awaitAuth(cn *conn) error {
	ctx := c.dialCtx
	if t := c.o.Limits.HandshakeTimeout; t > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, t)
		defer cancel()
	}
	return awaitAuth(ctx, cn)
}

// dropClosed runs on the event loop when a client conn closes, so the next
// Send to that address dials again.
func (c *Client) dropClosed(cn *conn) {
	c.mu.Lock()
	defer c.mu.Unlock()
	l := c.conns[cn.remote]
	if l == nil {
		return
	}
	select {
	case <-l.ready: // l.c is only safe to read once ready is closed
		if l.c == cn {
			delete(c.conns, cn.remote)
		}
	default:
	}
}
