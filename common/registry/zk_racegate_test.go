package registry

import (
	"encoding/binary"
	"io"
	"net"
	"testing"
	"time"
)

// tcpPair is a connected loopback pair: kernel buffers, unlike net.Pipe,
// so the scripted server never blocks the client under test.
func tcpPair(t *testing.T) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	server = <-accepted
	if server == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { client.Close(); server.Close() })
	return client, server
}

func packet(xid, op int32, body int) []byte {
	b := make([]byte, 12+body)
	binary.BigEndian.PutUint32(b[0:], uint32(8+body))
	binary.BigEndian.PutUint32(b[4:], uint32(xid))
	binary.BigEndian.PutUint32(b[8:], uint32(op))
	return b
}

// The connect response passes at once; what follows waits for the
// setWatches packet to be written (or for gateWait).
func TestGatedConn(t *testing.T) {
	client, server := tcpPair(t)
	g := newGatedConn(client)
	go func() {
		hs := make([]byte, 4+16)
		binary.BigEndian.PutUint32(hs, 16)
		_, _ = server.Write(hs)              // connect response
		_, _ = server.Write(packet(1, 0, 4)) // a response after it
		_, _ = io.Copy(io.Discard, server)   // what the client writes
	}()
	if _, err := g.Write(packet(0, opSetWatches, 4)); err != nil { // the connect request never opens the gate
		t.Fatal(err)
	}
	hdr := make([]byte, 4)
	if _, err := io.ReadFull(g, hdr); err != nil {
		t.Fatal(err)
	}
	body := make([]byte, binary.BigEndian.Uint32(hdr))
	if _, err := io.ReadFull(g, body); err != nil {
		t.Fatal(err)
	}

	got := make(chan time.Time, 1)
	go func() {
		buf := make([]byte, 16)
		_, _ = io.ReadFull(g, buf)
		got <- time.Now()
	}()
	if _, err := g.Write(packet(2, 3, 8)); err != nil { // not setWatches: gate stays shut
		t.Fatal(err)
	}
	select {
	case <-got:
		t.Fatal("a response passed before setWatches was written")
	case <-time.After(50 * time.Millisecond):
	}
	sent := time.Now()
	if _, err := g.Write(packet(3, opSetWatches, 8)); err != nil {
		t.Fatal(err)
	}
	select {
	case at := <-got:
		if at.Before(sent) {
			t.Fatal("response delivered before the gate opened")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("gate did not open on setWatches")
	}
}

// Without a setWatches packet the gate opens on its own.
func TestGatedConnOpensAlone(t *testing.T) {
	client, server := tcpPair(t)
	g := newGatedConn(client)
	go func() {
		hs := make([]byte, 4+16)
		binary.BigEndian.PutUint32(hs, 16)
		_, _ = server.Write(hs)
		_, _ = server.Write(packet(1, 0, 4))
	}()
	buf := make([]byte, 20)
	if _, err := io.ReadFull(g, buf); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	if _, err := io.ReadFull(g, make([]byte, 16)); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(begin); waited < gateWait/2 {
		t.Fatalf("data passed a shut gate after %v", waited)
	}
}
