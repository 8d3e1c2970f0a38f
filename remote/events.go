package remote

import (
	"context"
	"fmt"
	"sync"

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

	auth    *Auth    // nil: connections are not authenticated
	authLog *rateLog // rate-limits the lines about peers that failed it

	onBoot  func(gnet.Engine) gnet.Action // server: learn the bound address
	onClose func(*conn)                   // client: drop the conn from the cache
}

func newEvents(h Handler, o Options, client bool) *events {
	ctx, cancel := context.WithCancel(context.Background())
	e := &events{h: h, maxBody: o.MaxBody, log: o.Log, client: client, queueLimit: maxQueued, ctx: ctx, cancel: cancel,
		auth: o.Auth, authLog: &rateLog{}}
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

func (e *events) OnBoot(eng gnet.Engine) gnet.Action {
	if e.onBoot != nil {
		return e.onBoot(eng)
	}
	return gnet.None
}

func (e *events) OnOpen(gc gnet.Conn) ([]byte, gnet.Action) {
	c, _ := gc.Context().(*conn) // a client conn is made before it is dialled
	if c == nil {
		c = newConn(gc.RemoteAddr().String(), e.maxBody, e.client)
		gc.SetContext(c)
	}
	c.gc = gc
	c.queueLimit = e.queueLimit
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
	e.handshakeClosed(c, err)
	if e.onClose != nil {
		e.onClose(c)
	}
	e.log.Debug("connection closed", zap.String("remote", c.remote), zap.Error(err))
	return gnet.None
}

// OnTraffic decodes every complete frame in the inbound buffer. A frame is
// only peeked once its header says it is complete, so a large body arriving
// in many reads is not re-copied on each read.
func (e *events) OnTraffic(gc gnet.Conn) gnet.Action {
	c, _ := gc.Context().(*conn)
	if c == nil {
		return gnet.Close
	}
	if c.hs != nil { // nothing but the handshake is read before it succeeds
		if done, act := e.handshakeTraffic(c, gc); !done {
			return act
		}
	}
	for {
		avail := gc.InboundBuffered()
		if avail == 0 {
			return gnet.None
		}
		hdr, err := gc.Peek(min(avail, frame.HeaderSize))
		if err != nil {
			return e.reject(c, "peek header", err)
		}
		total, err := frame.Size(hdr, e.maxBody)
		if err != nil {
			return e.reject(c, "bad frame", err)
		}
		if total == 0 || avail < total {
			return gnet.None // wait for the rest
		}
		buf, err := gc.Peek(total)
		if err != nil {
			return e.reject(c, "peek frame", err)
		}
		f, _, err := frame.Decode(buf, e.maxBody)
		if err != nil {
			return e.reject(c, "bad frame", err)
		}
		// f.Body aliases gnet's buffer, but message.Decode (JSON) copies
		// everything it keeps, so the body need not be copied first.
		m, err := message.Decode(f.Type, f.Body)
		if _, derr := gc.Discard(total); derr != nil && err == nil {
			err = derr
		}
		if err != nil {
			return e.reject(c, "bad message", err)
		}
		if c.deliver(f.RequestID, m) {
			continue
		}
		if !c.enqueue(inbound{reqID: f.RequestID, m: m}) {
			return e.reject(c, "handler queue full", nil)
		}
	}
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
