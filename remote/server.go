package remote

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"sync"
	"time"

	"github.com/panjf2000/gnet/v2"
	"go.uber.org/zap"
)

// Server accepts connections and hands their messages to a Handler.
type Server struct {
	addr string
	o    Options
	ev   *events
	log  *zap.Logger

	mu      sync.Mutex
	state   int
	eng     gnet.Engine   // valid once booted is closed
	bound   string        // actual address, set before booted is closed
	bootErr error         // set before booted is closed when OnBoot fails
	booted  chan struct{} // closed by OnBoot
	runDone chan struct{} // closed when gnet.Run has returned
	runErr  error         // gnet.Run's result, valid once runDone is closed

	stopOnce sync.Once
	stopped  chan struct{}
}

// NewServer returns a server that will listen on addr ("host:port"; port 0
// picks a free port, see Addr).
func NewServer(addr string, h Handler, o Options) *Server {
	o = o.withDefaults()
	s := &Server{
		addr:    addr,
		o:       o,
		log:     o.Log.Named("remote.server"),
		booted:  make(chan struct{}),
		runDone: make(chan struct{}),
		stopped: make(chan struct{}),
	}
	s.ev = newEvents(h, Options{MaxBody: o.MaxBody, Log: s.log, Auth: o.Auth}, false)
	s.ev.onBoot = s.boot
	return s
}

// Start binds and returns once listening, or returns the bind error. ctx
// bounds the start-up only; Stop ends the server. A stopped server cannot
// be started again.
func (s *Server) Start(ctx context.Context) error {
	s.mu.Lock()
	switch s.state {
	case stateStarted:
		s.mu.Unlock()
		return errors.New("remote: server already started")
	case stateStopped:
		s.mu.Unlock()
		return ErrStopped
	}
	s.state = stateStarted
	s.mu.Unlock()

	go func() {
		defer close(s.runDone)
		s.runErr = gnet.Run(s.ev, "tcp://"+s.addr,
			gnet.WithMulticore(true),
			gnet.WithReuseAddr(true), // rebind at once after a restart despite TIME_WAIT
			gnet.WithTCPKeepAlive(30*time.Second),
			gnet.WithLogger(gnetLogger(s.log)))
		if s.runErr == nil && !s.stopping() {
			// An engine that ends on its own (e.g. accept failing with EMFILE) serves nobody.
			s.log.Error("gnet engine exited while the server was running", zap.String("addr", s.addr))
		}
	}()

	var err error
	select {
	case <-s.booted:
		if err = s.bootErr; err == nil {
			s.log.Info("listening", zap.String("addr", s.Addr()))
			return nil
		}
	case <-s.runDone:
		// OnBoot, if it ran, finished before Run returned.
		switch {
		case s.bootErr != nil:
			err = s.bootErr
		case s.runErr != nil:
			err = fmt.Errorf("listen %s: %w", s.addr, s.runErr)
		default:
			err = fmt.Errorf("listen %s: gnet engine exited during start", s.addr)
		}
	case <-ctx.Done():
		err = ctx.Err()
	}
	s.Stop()
	return err
}

func (s *Server) stopping() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state == stateStopped
}

// boot runs in OnBoot, after the listener is bound and before connections are
// served. It resolves port 0 through a duplicate of the listening socket,
// since gnet does not expose its listener's address.
func (s *Server) boot(eng gnet.Engine) gnet.Action {
	defer close(s.booted)
	s.eng = eng
	addr, err := listenerAddr(eng)
	if err != nil {
		s.bootErr = fmt.Errorf("listen %s: bound address: %w", s.addr, err)
		return gnet.Shutdown
	}
	s.mu.Lock()
	s.bound = addr
	s.mu.Unlock()
	return gnet.None
}

func listenerAddr(eng gnet.Engine) (string, error) {
	fd, err := eng.Dup()
	if err != nil {
		return "", err
	}
	f := os.NewFile(uintptr(fd), "listener")
	defer f.Close()
	ln, err := net.FileListener(f) // dups again; closing it leaves gnet's socket open
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

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
// Shutdown order: refuse new starts; stop the engine (listener closed, every
// conn closed so writes fail fast with ErrClosed); wait for gnet.Run to
// return; cancel the handler context so queued messages are dropped; wait
// for handler goroutines, which at most finish the handler call in progress.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		prev := s.state
		s.state = stateStopped
		s.mu.Unlock()
		if prev == stateStarted {
			select {
			case <-s.booted:
				// A done ctx makes Engine.Stop trigger the shutdown without its
				// 500ms polling; waiting on runDone below is the real wait.
				ctx, cancel := context.WithCancel(context.Background())
				cancel()
				_ = s.eng.Stop(ctx)
			case <-s.runDone:
			}
			<-s.runDone
		}
		s.ev.cancel()
		s.ev.wg.Wait()
		close(s.stopped)
	})
	<-s.stopped
}
