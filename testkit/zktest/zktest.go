// Package zktest runs private ZooKeeper servers from Debian's zookeeper
// package for tests and benchmarks: one JVM per server, a temp dir, free
// ports on 127.0.0.1 and a short tickTime so session timeouts of a second or
// two are allowed. Servers die with the test binary (parent-death signal)
// and can be killed, restarted on the same port and data, or paused, so
// tests can take ZooKeeper away mid-run. Proxy (proxy.go) cuts the network
// between a client and a running server instead.
package zktest

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/internal/lifeline"
	"github.com/beluga-scheduler/beluga/testkit/freeport"
)

// Jar is the server jar of Debian's zookeeper package.
const Jar = "/usr/share/java/zookeeper.jar"

// The logging binding the server uses. The jar's manifest brings every
// other dependency. The whole of /usr/share/java/* is not put on the class
// path: it holds six slf4j bindings, of which slf4j picks one by directory
// order (the no-op one here, so no log at all), and log4j-over-slf4j next to
// slf4j-log4j12, which aborts the JVM at start.
var logJars = []string{"/usr/share/java/slf4j-log4j12.jar", "/usr/share/java/log4j-1.2.jar"}

const installHint = "install Debian's zookeeper package (scripts/deps.sh)"

type config struct {
	tick         time.Duration
	startTimeout time.Duration
}

// Option tunes the servers started by Start, Ensemble and their variants.
type Option func(*config)

// TickTime sets ZooKeeper's tickTime (default 200ms). Sessions may last
// from 2 ticks to 60s.
func TickTime(d time.Duration) Option { return func(c *config) { c.tick = d } }

// StartTimeout bounds how long a start or restart waits for the server to
// serve (default 30s; a JVM on a loaded machine can be slow to come up).
func StartTimeout(d time.Duration) Option { return func(c *config) { c.startTimeout = d } }

func newConfig(opts []Option) config {
	c := config{tick: 200 * time.Millisecond, startTimeout: 30 * time.Second}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// Server is one ZooKeeper server process.
type Server struct {
	id       int // myid in an ensemble; 0 standalone
	dir      string
	port     int
	peers    []peer // the ensemble, empty when standalone
	cfg      config
	javaPath string

	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{} // closed when the running process has been reaped
	running bool
}

type peer struct{ id, client, quorum, election int }

// Start runs a standalone server for the test and kills it when the test
// ends. A missing ZooKeeper installation fails the test: suites never skip.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	requireInstalled(t)
	s, err := StartProcess(t.TempDir(), opts...)
	if err != nil {
		t.Fatalf("zktest: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("zookeeper %s log (tail):\n%s", s.Addr(), s.LogTail(40))
		}
		s.Stop()
	})
	return s
}

// StartProcess is Start without testing.TB, for benchmark programs. The
// server lives in dir (created if missing, left in place); the caller stops
// it with Stop.
func StartProcess(dir string, opts ...Option) (*Server, error) {
	cfg := newConfig(opts)
	ports, err := freeport.Take(1)
	if err != nil {
		return nil, err
	}
	s, err := newServer(dir, 0, ports[0], nil, cfg)
	if err != nil {
		return nil, err
	}
	if err := s.start(); err != nil {
		return nil, err
	}
	if err := s.waitServing(cfg.startTimeout); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

func requireInstalled(t testing.TB) {
	t.Helper()
	if _, err := os.Stat(Jar); err != nil {
		t.Fatalf("zktest: %s not found: %s", Jar, installHint)
	}
	if _, err := exec.LookPath("java"); err != nil {
		t.Fatalf("zktest: java not found: %s", installHint)
	}
}

func newServer(dir string, id, clientPort int, peers []peer, cfg config) (*Server, error) {
	if _, err := os.Stat(Jar); err != nil {
		return nil, fmt.Errorf("%s not found: %s", Jar, installHint)
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, fmt.Errorf("java not found: %s", installHint)
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	s := &Server{id: id, dir: dir, port: clientPort, peers: peers, cfg: cfg, javaPath: java}
	if err := s.writeConfig(); err != nil {
		return nil, fmt.Errorf("zookeeper config in %s: %w", dir, err)
	}
	return s, nil
}

func (s *Server) writeConfig() error {
	if err := os.MkdirAll(filepath.Join(s.dir, "data"), 0o755); err != nil {
		return err
	}
	tickMs := s.cfg.tick.Milliseconds()
	if tickMs <= 0 {
		return fmt.Errorf("tickTime %v: want at least 1ms", s.cfg.tick)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "tickTime=%d\n", tickMs)
	// initLimit/syncLimit are counted in ticks: keep them at seconds so a
	// slow JVM start on a loaded machine does not break the ensemble.
	fmt.Fprintf(&b, "initLimit=%d\nsyncLimit=%d\n", max(10, 10000/tickMs), max(5, 2000/tickMs))
	fmt.Fprintf(&b, "dataDir=%s\n", filepath.Join(s.dir, "data"))
	fmt.Fprintf(&b, "clientPort=%d\nclientPortAddress=127.0.0.1\n", s.port)
	fmt.Fprintf(&b, "minSessionTimeout=%d\nmaxSessionTimeout=60000\n", 2*tickMs)
	b.WriteString("maxClientCnxns=0\nadmin.enableServer=false\n")
	b.WriteString("4lw.commands.whitelist=ruok,srvr,mntr\n")
	for _, p := range s.peers {
		fmt.Fprintf(&b, "server.%d=127.0.0.1:%d:%d\n", p.id, p.quorum, p.election)
	}
	if err := os.WriteFile(filepath.Join(s.dir, "zoo.cfg"), []byte(b.String()), 0o644); err != nil {
		return err
	}
	if s.id > 0 {
		if err := os.WriteFile(filepath.Join(s.dir, "data", "myid"), []byte(fmt.Sprintf("%d\n", s.id)), 0o644); err != nil {
			return err
		}
	}
	// Everything goes to a file in the dir: quiet tests, and a log to show
	// when one fails.
	log4j := fmt.Sprintf(`log4j.rootLogger=INFO, FILE
log4j.appender.FILE=org.apache.log4j.FileAppender
log4j.appender.FILE.File=%s
log4j.appender.FILE.Append=true
log4j.appender.FILE.layout=org.apache.log4j.PatternLayout
log4j.appender.FILE.layout.ConversionPattern=%%d{ISO8601} %%-5p [%%t:%%C{1}@%%L] %%m%%n
`, s.LogPath())
	return os.WriteFile(filepath.Join(s.dir, "log4j.properties"), []byte(log4j), 0o644)
}

// start launches the JVM; it does not wait for the server to serve.
func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		return nil
	}
	cp := Jar
	for _, j := range logJars {
		if _, err := os.Stat(j); err == nil {
			cp += ":" + j
		}
	}
	args := []string{
		// A small, quick-starting JVM: tests start many of them on few cores.
		"-Xms32m", "-Xmx256m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-XX:-UsePerfData",
		"-Djava.net.preferIPv4Stack=true",
		"-Dlog4j.configuration=file:" + filepath.Join(s.dir, "log4j.properties"),
		"-Dzookeeper.jmx.log4j.disable=true",
		"-Dzookeeper.admin.enableServer=false",
		"-Dzookeeper.4lw.commands.whitelist=ruok,srvr,mntr",
		// Test data needs no fsync and no 64MB preallocated log files.
		"-Dzookeeper.forceSync=no", "-Dzookeeper.preAllocSize=1024",
		// Peers that are down are noticed in a second, not five.
		"-Dzookeeper.cnxTimeout=1000",
		"-cp", cp, "org.apache.zookeeper.server.quorum.QuorumPeerMain", filepath.Join(s.dir, "zoo.cfg"),
	}
	out, err := os.OpenFile(filepath.Join(s.dir, "stdout.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	cmd := exec.Command(s.javaPath, args...)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = out, out
	cmd.SysProcAttr = childAttr()
	if err := lifeline.Start(cmd); err != nil {
		out.Close()
		return fmt.Errorf("start zookeeper: %w", err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait() // the exit is noticed through exited
		out.Close()
		close(exited)
	}()
	s.cmd, s.exited, s.running = cmd, exited, true
	return nil
}

// waitServing polls srvr until the server reports a mode (standalone,
// leader or follower), which ruok alone does not prove in an ensemble.
func (s *Server) waitServing(timeout time.Duration) error {
	s.mu.Lock()
	exited := s.exited
	s.mu.Unlock()
	deadline := time.Now().Add(timeout)
	for {
		if s.Mode() != "" {
			return nil
		}
		select {
		case <-exited:
			return fmt.Errorf("zookeeper on %s exited at start:\n%s", s.Addr(), s.LogTail(30))
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("zookeeper on %s not serving after %v:\n%s", s.Addr(), timeout, s.LogTail(30))
		}
		select { // polling a starting JVM: there is nothing to wait on
		case <-exited:
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// Addr is the client address, "127.0.0.1:port".
func (s *Server) Addr() string { return fmt.Sprintf("127.0.0.1:%d", s.port) }

// Dir holds the config, data and logs of the server.
func (s *Server) Dir() string { return s.dir }

// LogPath is the server's log file.
func (s *Server) LogPath() string { return filepath.Join(s.dir, "zookeeper.log") }

// LogTail returns the last n lines of the server log and of its stdout.
func (s *Server) LogTail(n int) string {
	var b strings.Builder
	for _, f := range []string{s.LogPath(), filepath.Join(s.dir, "stdout.log")} {
		data, err := os.ReadFile(f)
		if err != nil || len(data) == 0 {
			continue
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) > n {
			lines = lines[len(lines)-n:]
		}
		fmt.Fprintf(&b, "--- %s\n%s\n", filepath.Base(f), strings.Join(lines, "\n"))
	}
	return b.String()
}

// Mode is what srvr reports: "standalone", "leader" or "follower", or ""
// when the server is down, paused or not serving (an ensemble member
// without quorum).
func (s *Server) Mode() string {
	out, err := FourLetter(s.Addr(), "srvr", 500*time.Millisecond)
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(out, "\n") {
		if m, ok := strings.CutPrefix(line, "Mode: "); ok {
			return strings.TrimSpace(m)
		}
	}
	return ""
}

// Stop kills the server (SIGKILL) and waits until it is gone. Safe to call
// when it is not running.
func (s *Server) Stop() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.running {
		return
	}
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL) // the whole group: the JVM and nothing else
	<-s.exited
	s.running = false
}

// Restart kills the server if it runs and starts it again on the same port
// and data, then waits until it serves. An ensemble member serves only
// once a quorum of members runs.
func (s *Server) Restart() error {
	s.Stop()
	if err := s.start(); err != nil {
		return err
	}
	return s.waitServing(s.cfg.startTimeout)
}

// Pause freezes the server (SIGSTOP): it keeps its sockets but answers
// nothing. Resume lets it go on. Both are no-ops when it is not running.
func (s *Server) Pause() {
	s.signal(syscall.SIGSTOP)
	s.mu.Lock()
	pid := s.cmd.Process.Pid
	s.mu.Unlock()
	waitStopped(pid)
}

// waitStopped returns once every thread of pid is stopped: SIGSTOP reaches
// the threads of a JVM one by one, and a thread still running could answer
// one more request.
func waitStopped(pid int) {
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
		if err != nil {
			return
		}
		all := true
		for _, t := range tasks {
			b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, t.Name()))
			if err != nil {
				continue
			}
			st := string(b)
			if i := strings.LastIndexByte(st, ')'); i >= 0 && i+2 < len(st) && st[i+2] != 'T' && st[i+2] != 't' {
				all = false
				break
			}
		}
		if all {
			return
		}
		time.Sleep(5 * time.Millisecond) // the kernel stops threads asynchronously
	}
}

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		_ = syscall.Kill(-s.cmd.Process.Pid, sig)
	}
}

// Cluster is a ZooKeeper ensemble.
type Cluster struct {
	Servers []*Server
}

// Ensemble runs an n-server ensemble (3 where quorum matters) for the test
// and kills it when the test ends.
func Ensemble(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	requireInstalled(t)
	c, err := StartEnsemble(t.TempDir(), n, opts...)
	if err != nil {
		t.Fatalf("zktest: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, s := range c.Servers {
				t.Logf("zookeeper %d (%s) log (tail):\n%s", s.id, s.Addr(), s.LogTail(25))
			}
		}
		c.Stop()
	})
	return c
}

// StartEnsemble is Ensemble without testing.TB: server i lives in dir/zk<i>.
func StartEnsemble(dir string, n int, opts ...Option) (*Cluster, error) {
	if n < 1 {
		return nil, fmt.Errorf("ensemble of %d servers: want at least 1", n)
	}
	cfg := newConfig(opts)
	ports, err := freeport.Take(3 * n)
	if err != nil {
		return nil, err
	}
	peers := make([]peer, n)
	for i := range peers {
		peers[i] = peer{id: i + 1, client: ports[3*i], quorum: ports[3*i+1], election: ports[3*i+2]}
	}
	c := &Cluster{}
	for _, p := range peers {
		s, err := newServer(filepath.Join(dir, fmt.Sprintf("zk%d", p.id)), p.id, p.client, peers, cfg)
		if err != nil {
			return nil, err
		}
		c.Servers = append(c.Servers, s)
	}
	// All JVMs start together: none can serve before a quorum has elected.
	for _, s := range c.Servers {
		if err := s.start(); err != nil {
			c.Stop()
			return nil, err
		}
	}
	for _, s := range c.Servers {
		if err := s.waitServing(cfg.startTimeout); err != nil {
			c.Stop()
			return nil, err
		}
	}
	return c, nil
}

// Addr is the comma-separated client address list.
func (c *Cluster) Addr() string { return strings.Join(c.Addrs(), ",") }

// Addrs lists the client addresses.
func (c *Cluster) Addrs() []string {
	out := make([]string, len(c.Servers))
	for i, s := range c.Servers {
		out[i] = s.Addr()
	}
	return out
}

// Leader is the member that currently leads, or nil.
func (c *Cluster) Leader() *Server {
	for _, s := range c.Servers {
		if s.Mode() == "leader" {
			return s
		}
	}
	return nil
}

// Stop kills every member.
func (c *Cluster) Stop() {
	for _, s := range c.Servers {
		s.Stop()
	}
}

// FourLetter sends a four-letter command (ruok, srvr, mntr) and returns
// the reply.
func FourLetter(addr, cmd string, timeout time.Duration) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(timeout))
	if _, err := conn.Write([]byte(cmd)); err != nil {
		return "", err
	}
	var b strings.Builder
	buf := make([]byte, 4096)
	for {
		n, err := conn.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			if errors.Is(err, os.ErrDeadlineExceeded) && b.Len() == 0 {
				return "", err
			}
			return b.String(), nil
		}
	}
}
