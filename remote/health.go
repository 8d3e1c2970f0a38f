package remote

import (
	"errors"
	"fmt"
	"time"

	"github.com/panjf2000/gnet/v2"
	"go.uber.org/zap"
)

// tickEvery is the engine's heartbeat; engineTimeout without one means the
// engine ended. gnet stops calling OnTick once any event loop has exited
// (it cancels the engine's context), and a dead loop never serves the
// connections later given to it.
const (
	tickEvery     = time.Second
	engineTimeout = 10 * time.Second
)

func (s *Server) tick() (time.Duration, gnet.Action) {
	s.lastTick.Store(time.Now().UnixNano())
	return tickEvery, gnet.None
}

// Err is nil while the server accepts and serves. It is non-nil while
// accepts fail (descriptors ran out: the server retries and recovers by
// itself), and for good once the server can serve nobody (Dead is closed).
func (s *Server) Err() error {
	select {
	case <-s.dead:
		return s.fatalErr
	default:
	}
	s.checkEngine(time.Now())
	select {
	case <-s.dead:
		return s.fatalErr
	default:
	}
	if p := s.acceptErr.Load(); p != nil {
		return *p
	}
	return nil
}

// Dead is closed when the server can no longer serve (its listener closed
// under it or its event loops ended) while not stopping. Nothing restarts
// it: the process is expected to exit non-zero and be restarted by its
// supervisor (see docs/architecture.md).
func (s *Server) Dead() <-chan struct{} { return s.dead }

func (s *Server) fail(err error) {
	s.fatalOnce.Do(func() {
		s.fatalErr = fmt.Errorf("remote server %s: %w", s.addr, err)
		s.log.Error("server can no longer serve", zap.Error(err))
		close(s.dead)
	})
}

// checkEngine fails the server when the engine's heartbeat stopped while
// the server runs. The sweeper calls it on each of its ticks.
func (s *Server) checkEngine(now time.Time) {
	s.mu.Lock()
	running := s.cli != nil && !s.stopping()
	s.mu.Unlock()
	if running && now.Sub(time.Unix(0, s.lastTick.Load())) > engineTimeout {
		s.fail(errors.New("gnet event loops stopped"))
	}
}
