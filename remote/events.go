package remote

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/panjf2000/gnet/v2"
	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/remote/frame"
	"github.com/beluga-scheduler/beluga/remote/message"
)

// events is the gnet event handler shared by Server and Client. Its methods
// run on gnet event loops and never block: they decode, queue and return.
type events struct {
	gnet.BuiltinEventEngine

	h       Handler
	maxBody int
	log     *zap.Logger
	client  bool // conns carry pending requests
	// queueLimit is maxQueued; tests lower it.
	queueLimit int

	// ctx ends when the owner stops; handler goroutines then drop their queues.
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup // one per conn.serve goroutine

	auth    *Auth     // nil: connections are not authenticated
	authLog *logLimit // rate-limits the lines about peers that failed it

	onTick  func() (time.Duration, gnet.Action) // server: engine heartbeat
	onClose func(*conn)                         // client: drop the conn from the cache

	budget budget     // bytes of partial frames held; unlimited unless set
	peers  *peerTable // server: per-peer counts and the sweeper's conn set
}

func newEvents(h Handler, o Options, client bool) *events {
	ctx, cancel := context.WithCancel(context.Background())
	e := &events{h: h, maxBody: o.MaxBody, log: o.Log, client: client, queueLimit: maxQueued, ctx: ctx, cancel: cancel,
		auth: o.Auth, authLog: newLogLimit(authLogBurst, time.Second/authLogRate)}
	if e.h == nil {
		e.h = func(p Peer, reqID uint64, m message.Message) {
			e.log.Debug("no handler: message dropped",
				zap.String("remote", p.RemoteAddr()), zap.Uint64("req_id", reqID), zap.String("type", fmt.Sprintf("%T", m)))
		}
	}
	return e
}

// gnetLog routes gnet's own logs to ours. Its info lines (event loop counts
// at start-up) are demoted to debug: they are noise at our info level.
type gnetLog struct{ s *zap.SugaredLogger }

func gnetLogger(l *zap.Logger) gnetLog { return gnetLog{l.Named("gnet").Sugar()} }

func (g gnetLog) Debugf(f string, a ...any) { g.s.Debugf(f, a...) }
func (g gnetLog) Infof(f string, a ...any)  { g.s.Debugf(f, a...) }
func (g gnetLog) Warnf(f string, a ...any)  { g.s.Warnf(f, a...) }
func (g gnetLog) Errorf(f string, a ...any) { g.s.Errorf(f, a...) }
func (g gnetLog) Fatalf(f string, a ...any) { g.s.Fatalf(f, a...) }

func (e *events) OnTick() (time.Duration, gnet.Action) {
	if e.onTick != nil {
		return e.onTick()
	}
	return time.Hour, gnet.None
}

func (e *events) OnOpen(gc gnet.Conn) ([]byte, gnet.Action) {
	c, _ := gc.Context().(*conn) // a client conn is made before it is dialled
	if c == nil {
		c = newConn(gc.RemoteAddr().String(), e.maxBody, e.client)
		gc.SetContext(c)
	}
	c.gc = gc
	c.queueLimit = e.queueLimit
	c.opened = time.Now().UnixNano()
	c.lastRecv.Store(c.opened)
	if e.peers != nil {
		e.peers.add(c)
	}
	e.wg.Add(1)
	go func() {
		defer e.wg.Done()
		c.serve(e.ctx, e.safe(c.remote))
	}()
	e.log.Debug("connection open", zap.String("remote", c.remote))
	if e.auth != nil {
		return e.beginHandshake(c), gnet.None
	}
	return nil, gnet.None
}

func (e *events) OnClose(gc gnet.Conn, err error) gnet.Action {
	c, _ := gc.Context().(*conn)
	if c == nil {
		return gnet.None
	}
	c.markClosed()
	e.releaseBuffer(c)
	if e.peers != nil {
		e.peers.remove(c)
		e.peers.release(c.peerIP)
	}
	e.handshakeClosed(c, err)
	if e.onClose != nil {
		e.onClose(c)
	}
	e.log.Debug("connection closed", zap.String("remote", c.remote), zap.Error(err))
	return gnet.None
}

// OnTraffic takes everything gnet read and decodes the complete frames in
// it straight from gnet's read buffer. The rest of a frame that is not
// complete goes to the conn's own buffer (limits.go), so gnet's buffers
// never grow with what a peer announces, and the partial frame is freed
// when it completes or the conn closes.
func (e *events) OnTraffic(gc gnet.Conn) gnet.Action {
	c, _ := gc.Context().(*conn)
	if c == nil {
		return gnet.Close
	}
	c.lastRecv.Store(time.Now().UnixNano())
	if c.hs != nil { // nothing but the handshake is read before it succeeds
		if done, act := e.handshakeTraffic(c, gc); !done {
			return act
		}
	}
	data, err := gc.Next(-1)
	if err != nil {
		return e.reject(c, "read", err)
	}
	for len(data) > 0 {
		if len(c.in) == 0 {
			total, err := frame.Size(data, e.maxBody)
			if err != nil {
				return e.reject(c, "bad frame", err)
			}
			if total > 0 && len(data) >= total {
				if a := e.handleFrame(c, data[:total]); a != gnet.None {
					return a
				}
				data = data[total:]
				continue
			}
		}
		n, err := e.buffer(c, data)
		if errors.Is(err, errBudget) {
			return e.reject(c, "buffer limit", err)
		} else if err != nil {
			return e.reject(c, "bad frame", err)
		}
		data = data[n:]
		if frameComplete(c.in, e.maxBody) {
			a := e.handleFrame(c, c.in)
			e.releaseBuffer(c)
			if a != gnet.None {
				return a
			}
		}
	}
	return gnet.None
}

// handleFrame decodes one whole frame and hands its message on.
func (e *events) handleFrame(c *conn, buf []byte) gnet.Action {
	f, _, err := frame.Decode(buf, e.maxBody)
	if err != nil {
		return e.reject(c, "bad frame", err)
	}
	// f.Body aliases a buffer that is reused, but message.Decode (JSON)
	// copies everything it keeps.
	m, err := message.Decode(f.Type, f.Body)
	if err != nil {
		return e.reject(c, "bad message", err)
	}
	if !c.authed.Load() && !e.authenticated(c, m) {
		return e.reject(c, "not authenticated", nil)
	}
	if c.deliver(f.RequestID, m) {
		return gnet.None
	}
	if !c.enqueue(inbound{reqID: f.RequestID, m: m}) {
		return e.reject(c, "handler queue full", nil)
	}
	return gnet.None
}

// reject logs why a connection is dropped (its one warning) and closes it.
func (e *events) reject(c *conn, reason string, err error) gnet.Action {
	e.log.Warn("closing connection", zap.String("remote", c.remote), zap.String("reason", reason), zap.Error(err))
	return gnet.Close
}

// safe wraps the handler so that a panic in it is logged with its stack and
// closes nothing but that one message: a bad message never kills a server.
func (e *events) safe(remote string) Handler {
	return func(p Peer, reqID uint64, m message.Message) {
		defer func() {
			if r := recover(); r != nil {
				e.log.Error("message handler panicked", zap.String("remote", remote),
					zap.String("message", fmt.Sprintf("%T", m)), zap.Any("panic", r), zap.Stack("stack"))
			}
		}()
		e.h(p, reqID, m)
	}
}
