package remote

import (
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/panjf2000/gnet/v2"
	"go.uber.org/zap"
)

// acceptLoop accepts until the listener closes. An accept error (EMFILE,
// ENFILE, ENOBUFS...) is retried after a backoff, as net/http does: the
// pending connection waits in the kernel's backlog meanwhile. While accepts
// fail, Err reports it.
func (s *Server) acceptLoop(ln net.Listener, cli *gnet.Client) {
	var delay time.Duration
	for {
		nc, err := ln.Accept()
		if err != nil {
			if s.stopping() {
				return
			}
			if errors.Is(err, net.ErrClosed) {
				s.fail(fmt.Errorf("listener %s closed: %w", s.Addr(), err))
				return
			}
			delay = acceptBackoff(delay)
			s.acceptFailed(err, delay)
			select {
			case <-time.After(delay):
			case <-s.quit:
				return
			}
			continue
		}
		if err := s.admit(nc, cli); err != nil {
			// Out of descriptors for the duplicate gnet makes: as bad as a
			// failed accept, and shedding at full speed helps nobody.
			delay = acceptBackoff(delay)
			s.acceptFailed(err, delay)
			select {
			case <-time.After(delay):
			case <-s.quit:
				return
			}
			continue
		}
		if delay != 0 {
			delay = 0
			s.acceptErr.Store(nil)
			s.log.Info("accepting again", zap.String("addr", s.Addr()))
		}
	}
}

func (s *Server) acceptFailed(err error, delay time.Duration) {
	s.acceptErrs.Add(1)
	werr := fmt.Errorf("accept on %s: %w", s.Addr(), err)
	s.acceptErr.Store(&werr)
	if n, ok := s.acceptLog.allow(time.Now()); ok {
		s.log.Warn("accept failed; retrying", zap.String("addr", s.Addr()), zap.Duration("backoff", delay), zap.Error(err),
			zap.Int("suppressed_since_last", n))
	}
}

// admit enrolls an accepted connection with the engine, unless its peer is
// at the per-peer cap. Enrolling duplicates the socket, which fails first
// when descriptors run out: the connection is then shed and the error
// returned. With TLS, the handshake runs in a goroutine of its own
// (admitTLS), which enrolls the connection once it succeeds.
func (s *Server) admit(nc net.Conn, cli *gnet.Client) error {
	ip := peerIP(nc.RemoteAddr())
	if !s.peers.admit(ip) {
		nc.Close()
		if n, ok := s.refusedLog.allow(time.Now()); ok {
			s.log.Warn("refusing connection: too many connections from peer",
				zap.String("peer", ip), zap.Int("max_conns_per_peer", s.limits.MaxConnsPerPeer),
				zap.Int("suppressed_since_last", n))
		}
		return nil
	}
	enroll := func(nc net.Conn, remote, ip string) error { return s.enroll(cli, nc, remote, ip) }
	if s.tlsCfg != nil {
		s.hsWG.Add(1)
		go s.admitTLS(nc, ip, enroll)
		return nil
	}
	return enroll(nc, nc.RemoteAddr().String(), ip)
}

// enroll hands nc to the engine as the connection from remote (ip counted
// in the peer table; released here on failure).
func (s *Server) enroll(cli *gnet.Client, nc net.Conn, remote, ip string) error {
	c := newConn(remote, s.o.MaxBody, false)
	c.peerIP = ip
	// EnrollContext runs OnOpen before it returns and closes nc either way.
	_, err := cli.EnrollContext(nc, c)
	if err == nil && c.gc == nil {
		err = ErrClosed // the engine could not register it
	}
	if err != nil {
		s.peers.release(ip) // OnOpen did not run, so OnClose will not
		return fmt.Errorf("enroll connection from %s: %w", c.remote, err)
	}
	return nil
}
