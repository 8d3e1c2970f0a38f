package zktest

import (
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"io"
	"net"
	"testing"
	"time"
)

func TestServerLifecycle(t *testing.T) {
	s := Start(t)
	if out, err := FourLetter(s.Addr(), "ruok", time.Second); err != nil || out != "imok" {
		t.Fatalf("ruok = %q, %v; want imok", out, err)
	}
	if m := s.Mode(); m != "standalone" {
		t.Fatalf("mode = %q, want standalone", m)
	}

	s.Pause()
	if m := s.Mode(); m != "" {
		t.Fatalf("paused server answered srvr: mode %q", m)
	}
	s.Resume()
	waitMode(t, s, "standalone")

	s.Stop()
	s.Stop() // safe twice
	if _, err := FourLetter(s.Addr(), "ruok", 200*time.Millisecond); err == nil {
		t.Fatal("stopped server still answers")
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if m := s.Mode(); m != "standalone" {
		t.Fatalf("after restart mode = %q", m)
	}
}

func TestEnsembleSurvivesOneLoss(t *testing.T) {
	c := Ensemble(t, 3)
	leader := c.Leader()
	if leader == nil {
		t.Fatal("no leader in a fresh ensemble")
	}
	leader.Stop()
	wait.Until(t, 20*time.Second, "a new leader after losing one of three", func() bool { return c.Leader() != nil })
	if err := leader.Restart(); err != nil {
		t.Fatal(err)
	}
	if m := leader.Mode(); m != "follower" {
		t.Fatalf("restarted member mode = %q, want follower", m)
	}
}

func TestProxyPartition(t *testing.T) {
	p := echoProxy(t)
	c := dial(t, p)
	if err := echo(c, 5*time.Second); err != nil {
		t.Fatalf("echo through proxy: %v", err)
	}
	p.Partition()
	if err := echo(c, 300*time.Millisecond); err == nil {
		t.Fatal("bytes crossed a partition")
	}
	p.Heal()
	if err := echo(c, 5*time.Second); err == nil {
		t.Fatal("connection from before the partition survived Heal")
	}
	c2 := dial(t, p)
	if err := echo(c2, 5*time.Second); err != nil {
		t.Fatalf("echo after heal: %v", err)
	}
}

// Resume ends a partition silently: a connection from before it relays
// again, and what was sent during the cut stays lost.
func TestProxyResume(t *testing.T) {
	p := echoProxy(t)
	c := dial(t, p)
	p.Partition()
	if err := echo(c, 300*time.Millisecond); err == nil {
		t.Fatal("bytes crossed a partition")
	}
	p.Resume()
	if err := echo(c, 5*time.Second); err != nil {
		t.Fatalf("echo on the old connection after Resume: %v", err)
	}
	// Two bytes came back: the ones sent during the cut were dropped, not
	// held (held ones would arrive first and two more would follow).
	_ = c.SetReadDeadline(time.Now().Add(300 * time.Millisecond))
	if n, _ := c.Read(make([]byte, 4)); n != 0 {
		t.Fatalf("%d more bytes after Resume: the cut held them instead of dropping them", n)
	}
}

// SetDelay slows each direction of a link: an echo through the proxy
// takes at least the delay twice, and is quick again once it is 0.
func TestProxyDelay(t *testing.T) {
	p := echoProxy(t)
	c := dial(t, p)
	timed := func() time.Duration {
		t.Helper()
		start := time.Now()
		if err := echo(c, 10*time.Second); err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	const d = 600 * time.Millisecond
	p.SetDelay(d)
	if got := timed(); got < 2*d {
		t.Fatalf("echo with %v each way took %v, want at least %v", d, got, 2*d)
	}
	p.SetDelay(0)
	if got := timed(); got >= 2*d {
		t.Fatalf("echo after SetDelay(0) took %v", got)
	}
}

// Drop closes the connections through the proxy at once; a new one works.
func TestProxyDrop(t *testing.T) {
	p := echoProxy(t)
	c := dial(t, p)
	if err := echo(c, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	p.Drop()
	_ = c.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("read after Drop: %v, want EOF at once", err)
	}
	c2 := dial(t, p)
	if err := echo(c2, 5*time.Second); err != nil {
		t.Fatalf("echo on a new connection after Drop: %v", err)
	}
}

// dial connects to the proxy, closed when the test ends.
func dial(t *testing.T, p *Proxy) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// echoProxy is a Proxy in front of a local echo server.
func echoProxy(t *testing.T) *Proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	return NewProxy(t, ln.Addr().String())
}

// echo sends two bytes on c and waits up to wait for them to come back.
func echo(c net.Conn, wait time.Duration) error {
	if _, err := c.Write([]byte("hi")); err != nil {
		return err
	}
	_ = c.SetReadDeadline(time.Now().Add(wait))
	_, err := io.ReadFull(c, make([]byte, 2))
	return err
}

func waitMode(t *testing.T, s *Server, want string) {
	t.Helper()
	wait.Until(t, 10*time.Second, fmt.Sprintf("server mode %q", want), func() bool { return s.Mode() == want })
}
