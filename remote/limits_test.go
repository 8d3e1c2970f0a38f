package remote

import (
	"bufio"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/beluga-scheduler/beluga/remote/frame"
	"github.com/beluga-scheduler/beluga/remote/message"
)

// heapAlloc is the live heap after a full collection. Two collections: the
// first may only move pooled buffers to sync.Pool's victim cache.
func heapAlloc() int64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// halfFrame is a frame header announcing size body bytes, then sent bytes of it.
func halfFrame(typ message.Type, size, sent int) []byte {
	b := frame.Append(nil, frame.Frame{Type: typ, RequestID: 1})
	binary.BigEndian.PutUint32(b[12:16], uint32(size))
	return append(b, make([]byte, sent)...)
}

// sendHalfFrames opens n connections and writes payload on each; it returns
// once every write finished or failed (the server read it or closed).
func sendHalfFrames(t *testing.T, addr string, n int, payload []byte) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, n)
	var wg sync.WaitGroup
	for i := range conns {
		nc, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { nc.Close() })
		conns[i] = nc
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = nc.SetWriteDeadline(time.Now().Add(20 * time.Second))
			_, _ = nc.Write(payload) // an error means the server closed it: fine
		}()
	}
	wg.Wait()
	return conns
}

// waitClosedByServer waits until the server closed nc (a read ends).
func waitClosedByServer(t *testing.T, nc net.Conn, within time.Duration) {
	t.Helper()
	_ = nc.SetReadDeadline(time.Now().Add(within))
	_, err := io.Copy(io.Discard, nc)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("connection %s still open after %v", nc.LocalAddr(), within)
	}
}

const mib = 1 << 20

// TestHalfSentFramesBounded: frames that are announced and never finished
// cannot make the server hold much memory, and what they held is freed
// when their connections close or time out. Not parallel: it measures the
// heap.
func TestHalfSentFramesBounded(t *testing.T) {
	// Before the fix these phases grew the heap by ~208 and ~49 MiB; what is
	// left is MaxBuffered plus gnet's and the runtime's buffers, which vary
	// with load.
	const bound = 32 * mib
	s := startServer(t, "127.0.0.1:0", serve, Options{Limits: Limits{
		IdleTimeout: 500 * time.Millisecond, MaxBuffered: 8 * mib}})
	// Each phase's base is taken with its payload already allocated.
	big := halfFrame(message.TypeDispatch, 16*mib, 8*mib)
	base := heapAlloc()

	// 10 frames of 16 MiB, half sent: over the limit of their type, so the
	// server refuses them at the header and never buffers the body.
	conns := sendHalfFrames(t, s.Addr(), 10, big)
	d := heapAlloc() - base
	runtime.KeepAlive(big)
	t.Logf("10 half-sent 16 MiB frames: heap +%.1f MiB", float64(d)/mib)
	if d > bound {
		t.Errorf("10 half-sent 16 MiB frames: heap grew %d MiB, bound %d MiB", d/mib, bound/mib)
	}
	for _, nc := range conns {
		nc.Close()
	}
	wait.Until(t, 10*time.Second, "heap back after close", func() bool { return heapAlloc()-base < bound })

	// 10 frames within their type's limit, half sent: the server holds at
	// most MaxBuffered of them in all, and frees them on the idle timeout.
	small := halfFrame(message.TypeDispatch, 4*mib, 3*mib)
	base = heapAlloc()
	conns = sendHalfFrames(t, s.Addr(), 10, small)
	d = heapAlloc() - base
	runtime.KeepAlive(small)
	t.Logf("10 half-sent 4 MiB frames: heap +%.1f MiB", float64(d)/mib)
	if d > bound {
		t.Errorf("10 half-sent 4 MiB frames: heap grew %d MiB, bound %d MiB", d/mib, bound/mib)
	}
	for _, nc := range conns {
		waitClosedByServer(t, nc, 5*time.Second)
	}
	wait.Until(t, 10*time.Second, "heap back after idle timeout", func() bool { return heapAlloc()-base < bound })

	// The server still serves whole frames.
	c := startClient(t, nil, Options{})
	if _, err := c.Request(ctxT(t), s.Addr(), message.Ping{}); err != nil {
		t.Fatalf("ping after half-sent frames: %v", err)
	}
}

// pingRaw sends a Ping frame on nc and reads the Pong.
func pingRaw(nc net.Conn) error {
	if _, err := nc.Write(rawFrame(message.TypePing, []byte("{}"))); err != nil {
		return err
	}
	_ = nc.SetReadDeadline(time.Now().Add(5 * time.Second))
	hdr := make([]byte, frame.HeaderSize)
	if _, err := io.ReadFull(nc, hdr); err != nil {
		return err
	}
	n, err := frame.Size(hdr, 0)
	if err != nil {
		return err
	}
	if _, err := io.ReadFull(nc, make([]byte, n-frame.HeaderSize)); err != nil {
		return err
	}
	if message.Type(hdr[3]) != message.TypePong {
		return fmt.Errorf("reply type %d, want pong", hdr[3])
	}
	return nil
}

// TestIdleConnectionClosed: a connection that sends nothing is closed after
// the idle timeout; one that keeps talking stays open.
func TestIdleConnectionClosed(t *testing.T) {
	t.Parallel()
	const idle = 600 * time.Millisecond
	s := startServer(t, "127.0.0.1:0", serve, Options{Limits: Limits{IdleTimeout: idle}})

	// The server's idle clock starts at accept, which is after this start
	// and before Dial returns.
	silentStart := time.Now()
	silent, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	busy, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()

	// Talking every idle/6 for 4 idle periods keeps the busy one open (a
	// ping's round trip comes on top of the pause: on a loaded machine under
	// -race it has taken 200 ms and more).
	start := time.Now()
	busyErr := make(chan error, 1)
	go func() {
		for time.Since(start) < 4*idle {
			if err := pingRaw(busy); err != nil {
				busyErr <- fmt.Errorf("busy connection after %v: %w", time.Since(start), err)
				return
			}
			time.Sleep(idle / 6) // time is the subject: the client's pace, not synchronisation
		}
		busyErr <- nil
	}()
	waitClosedByServer(t, silent, 5*time.Second)
	if d := time.Since(silentStart); d < idle {
		t.Errorf("silent connection closed after %v, before the idle timeout %v", d, idle)
	}
	if err := <-busyErr; err != nil {
		t.Fatal(err)
	}
}

// TestHandshakeTimeout: a connection that keeps sending but never completes
// a valid first frame is closed after the handshake timeout, although it is
// never idle for long.
func TestHandshakeTimeoutLimit(t *testing.T) {
	t.Parallel()
	const hs = 300 * time.Millisecond
	s := startServer(t, "127.0.0.1:0", serve, Options{Limits: Limits{IdleTimeout: time.Minute, HandshakeTimeout: hs}})

	nc, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	// A Ping frame announcing a 64-byte body, one byte every hs/6.
	trickle := halfFrame(message.TypePing, 64, 64)
	closed := make(chan struct{})
	go func() {
		defer close(closed)
		waitClosedByServer(t, nc, 5*time.Second)
	}()
	start := time.Now()
	for _, b := range trickle {
		if _, err := nc.Write([]byte{b}); err != nil {
			break // closed by the server
		}
		select {
		case <-closed:
		case <-time.After(hs / 6): // the trickle's pace
			continue
		}
		break
	}
	<-closed
	if d := time.Since(start); d < hs || d > 5*time.Second {
		t.Errorf("trickling connection closed after %v, want about %v", d, hs)
	}

	// A connection whose first frame is valid outlives the handshake timeout.
	ok, err := net.Dial("tcp", s.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer ok.Close()
	if err := pingRaw(ok); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * hs) // time is the subject: let the handshake deadline pass
	if err := pingRaw(ok); err != nil {
		t.Fatalf("authenticated connection after the handshake timeout: %v", err)
	}
}

// TestPerPeerConnectionCap: connections from one address over the cap are
// refused, with one log line for the burst; closing one makes room again.
func TestPerPeerConnectionCap(t *testing.T) {
	t.Parallel()
	core, logs := observer.New(zapcore.DebugLevel)
	s := startServer(t, "127.0.0.1:0", serve, Options{Log: zap.New(core), Limits: Limits{MaxConnsPerPeer: 3}})

	var served []net.Conn
	refused := 0
	for range 6 {
		nc, err := net.Dial("tcp", s.Addr())
		if err != nil {
			t.Fatal(err)
		}
		defer nc.Close()
		if pingRaw(nc) == nil {
			served = append(served, nc)
		} else {
			refused++
		}
	}
	if len(served) != 3 || refused != 3 {
		t.Fatalf("6 connections with a cap of 3: %d served, %d refused", len(served), refused)
	}
	if n := logs.FilterMessageSnippet("too many connections").Len(); n != 1 {
		t.Errorf("%d log lines for 3 refusals in a burst, want 1", n)
	}
	served[0].Close()
	wait.Until(t, 10*time.Second, "room after a close", func() bool {
		nc, err := net.Dial("tcp", s.Addr())
		if err != nil {
			return false
		}
		defer nc.Close()
		return pingRaw(nc) == nil
	})
}

// fdChildEnv makes the test binary run fdChild instead of the tests.
const fdChildEnv = "BELUGA_REMOTE_FD_CHILD"

// fdChild serves on a remote.Server and an http.Server with a low
// RLIMIT_NOFILE. It prints both addresses, then answers "health" lines on
// stdin with the server's health, and exits at EOF.
func fdChild() int {
	s := NewServer("127.0.0.1:0", serve, Options{Limits: Limits{MaxConnsPerPeer: -1}})
	if err := s.Start(context.Background()); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer s.Stop()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok") })}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	lim := syscall.Rlimit{Cur: 48, Max: 48}
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Printf("%s %s\n", s.Addr(), ln.Addr())
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		if err := s.Err(); err != nil {
			fmt.Printf("unhealthy: %v\n", err)
		} else {
			fmt.Println("healthy")
		}
	}
	return 0
}

// TestAcceptRecoversFromFDExhaustion: a server that runs out of file
// descriptors keeps its listener: once the connections that used them
// close, it accepts again and stays healthy. So does net/http's server,
// which the API uses.
func TestAcceptRecoversFromFDExhaustion(t *testing.T) {
	t.Parallel()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fdChildEnv+"=1")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	cmd.WaitDelay = 5 * time.Second
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("child: %v", err)
		}
		if t.Failed() {
			t.Logf("child's stderr:\n%s", stderr.String())
		}
	})
	out := bufio.NewReader(stdout)
	line, err := out.ReadString('\n')
	if err != nil {
		t.Fatalf("child's addresses: %v", err)
	}
	var rpcAddr, httpAddr string
	if _, err := fmt.Sscan(line, &rpcAddr, &httpAddr); err != nil {
		t.Fatalf("child's addresses %q: %v", line, err)
	}

	// Far more connections than the child has descriptors: the kernel's
	// backlog completes them, the child's accept fails with EMFILE.
	var conns []net.Conn
	for _, addr := range []string{rpcAddr, httpAddr} {
		for range 100 {
			nc, err := net.DialTimeout("tcp", addr, time.Second)
			if err != nil {
				break // backlog full
			}
			conns = append(conns, nc)
		}
	}
	// The child reports its accepts failing, then the connections close.
	health := func() string {
		if _, err := io.WriteString(stdin, "health\n"); err != nil {
			t.Fatal(err)
		}
		h, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("child's health: %v", err)
		}
		return strings.TrimSpace(h)
	}
	wait.Until(t, 10*time.Second, "the child's accepts to fail", func() bool { return strings.Contains(health(), "too many open files") })
	for _, nc := range conns {
		nc.Close()
	}

	c := startClient(t, nil, Options{})
	wait.Until(t, 10*time.Second, "the rpc listener to accept again", func() bool {
		_, err := c.Request(ctxT(t), rpcAddr, message.Ping{})
		return err == nil
	})
	hc := &http.Client{Timeout: time.Second}
	wait.Until(t, 10*time.Second, "the http listener to accept again", func() bool {
		resp, err := hc.Get("http://" + httpAddr + "/")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	if h := health(); h != "healthy" {
		t.Fatalf("child after recovery: %q", h)
	}
}
