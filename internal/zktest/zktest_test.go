package zktest

import (
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
	deadline := time.Now().Add(20 * time.Second)
	for c.Leader() == nil {
		if time.Now().After(deadline) {
			t.Fatal("no new leader after losing one of three")
		}
		time.Sleep(100 * time.Millisecond) // polling servers: nothing to wait on
	}
	if err := leader.Restart(); err != nil {
		t.Fatal(err)
	}
	if m := leader.Mode(); m != "follower" {
		t.Fatalf("restarted member mode = %q, want follower", m)
	}
}

func TestProxyPartition(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { _, _ = io.Copy(c, c); c.Close() }()
		}
	}()
	p := NewProxy(t, ln.Addr().String())
	c, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	echo := func(c net.Conn, wait time.Duration) error {
		if _, err := c.Write([]byte("hi")); err != nil {
			return err
		}
		_ = c.SetReadDeadline(time.Now().Add(wait))
		buf := make([]byte, 2)
		_, err := io.ReadFull(c, buf)
		return err
	}
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
	c2, err := net.Dial("tcp", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if err := echo(c2, 5*time.Second); err != nil {
		t.Fatalf("echo after heal: %v", err)
	}
}

func waitMode(t *testing.T, s *Server, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for s.Mode() != want {
		if time.Now().After(deadline) {
			t.Fatalf("server mode never became %q", want)
		}
		time.Sleep(50 * time.Millisecond) // polling a server: nothing to wait on
	}
}
