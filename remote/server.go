package remote

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/panjf2000/gnet/v2"
	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/internal/startstop"
)

// Server accepts connections and hands their messages to a Handler.
//
// The server accepts in its own goroutine (accept.go) and enrolls each
// connection into a gnet engine that only does I/O. gnet's own listener
// ends the whole engine on the first accept error other than EAGAIN (EMFILE
// included); ours backs off and retries, so running out of descriptors
// sheds connections instead of killing the listener.
type Server struct {
	addr   string
	o      Options
	limits Limits
	ev     *events
	log    *zap.Logger
	peers  *peerTable

	life startstop.Base // Start once; owns the stopper goroutine

	mu    sync.Mutex
	ln    net.Listener
	cli   *gnet.Client
	bound string // actual address, set once listening

	// Health (health.go): the accept loop's current error, the engine's
	// last tick, and a fatal error once the server can serve nobody.
	acceptErr  atomic.Pointer[error]
	acceptErrs atomic.Int64 // accept errors so far
	lastTick   atomic.Int64 // unix nanoseconds
	fatalOnce  sync.Once
	fatalErr   error
	dead       chan struct{} // closed with fatalErr set

	refusedLog, acceptLog, expiredLog *logLimit // a line each 10 s at most

	quit  chan struct{}  // closed by the stopper: accept loop and sweeper end
	loops sync.WaitGroup // accept loop and sweeper, waited for by the stopper

	// TLS (tls.go): handshakes in flight end with hsCtx and are waited for
	// before the engine stops; bridges' copies end with their conns.
	tlsCfg   *tls.Config
	hsCtx    context.Context
	hsCancel context.CancelFunc
	hsWG     sync.WaitGroup
	pumps    sync.WaitGroup
}

// NewServer returns a server that will listen on addr ("host:port"; port 0
// picks a free port, see Addr).
func NewServer(addr string, h Handler, o Options) *Server {
	o = o.withDefaults()
	s := &Server{
		addr:   addr,
		o:      o,
		limits: o.Limits.withDefaults(),
		log:    o.Log.Named("remote.server"),
		dead:   make(chan struct{}),
		quit:   make(chan struct{}),
	}
	s.life.Name, s.life.Log = "remote server", s.log
	s.refusedLog, s.acceptLog, s.expiredLog = newLogLimit(1, 10*time.Second), newLogLimit(1, 10*time.Second), newLogLimit(1, 10*time.Second)
	s.peers = newPeerTable(s.limits.MaxConnsPerPeer)
	s.ev = newEvents(h, Options{MaxBody: o.MaxBody, Log: s.log, Auth: o.Auth}, false)
	s.ev.peers = s.peers
	s.ev.budget.limit = int64(s.limits.MaxBuffered)
	s.ev.onTick = s.tick
	s.hsCtx, s.hsCancel = context.WithCancel(context.Background())
	if o.TLS != nil {
		s.tlsCfg = o.TLS.serverConfig()
	}
	return s
}

// Start binds and returns once listening, or returns the bind error. ctx
// bounds the start-up only; Stop ends the server. A stopped server cannot
// be started again (ErrStopped), nor started twice.
func (s *Server) Start(ctx context.Context) error {
	err := s.life.StartWith(context.WithoutCancel(ctx), func() error {
		if err := s.start(ctx); err != nil {
			return err
		}
		s.log.Info("listening", zap.String("addr", s.Addr()))
		return nil
	}, nil)
	if errors.Is(err, startstop.ErrStopped) {
		return ErrStopped
	}
	return err
}

func (s *Server) start(ctx context.Context) error {
	s.life.Go(s.stopper) // a failed start is wound down by it as well
	// Go's listeners set SO_REUSEADDR: a restart rebinds despite TIME_WAIT.
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", s.addr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", s.addr, err)
	}
	cli, err := gnet.NewClient(s.ev,
		gnet.WithMulticore(true),
		gnet.WithTCPKeepAlive(30*time.Second),
		gnet.WithTicker(true),
		gnet.WithLogger(gnetLogger(s.log)))
	if err == nil {
		s.lastTick.Store(time.Now().UnixNano())
		err = cli.Start()
	}
	if err != nil {
		ln.Close()
		return fmt.Errorf("listen %s: start event loops: %w", s.addr, err)
	}
	s.mu.Lock()
	s.ln, s.cli, s.bound = ln, cli, ln.Addr().String()
	s.mu.Unlock()
	s.loops.Add(2)
	go func() { defer s.loops.Done(); s.acceptLoop(ln, cli) }()
	go func() { defer s.loops.Done(); s.sweep(s.quit) }()
	return nil
}

func (s *Server) stopping() bool { return !s.life.Running() }

// Addr is the bound "host:port" once started (port 0 resolved); "" before.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bound
}

// Stop closes the listener and every connection, then waits for the gnet
// engine and all handler goroutines to exit. Safe to call twice, concurrently,
// or before Start.
//
// Shutdown order: refuse new starts; close the listener and end the accept
// loop and sweeper; end TLS handshakes in flight; stop the engine (every conn closed so writes fail fast
// with ErrClosed); cancel the handler context so queued messages are
// dropped; wait for handler goroutines, which at most finish the handler
// call in progress. Stop gives up, logging it, at startstop.DefaultStopTimeout.
func (s *Server) Stop() { _ = s.life.Stop(nil) }

// stopper does Stop's work, in the order above, once Stop ends ctx.
func (s *Server) stopper(ctx context.Context) {
	<-ctx.Done()
	s.mu.Lock()
	ln, cli := s.ln, s.cli
	s.mu.Unlock()
	close(s.quit)
	s.hsCancel()
	if ln != nil {
		ln.Close()
	}
	s.loops.Wait()
	s.hsWG.Wait() // no TLS conn enrolls with a stopping engine
	if cli != nil {
		if err := cli.Stop(); err != nil {
			s.log.Warn("stopping gnet engine", zap.Error(err))
		}
	}
	s.pumps.Wait() // the engine closed its ends, which ends every bridge
	s.ev.cancel()
	s.ev.wg.Wait()
}
