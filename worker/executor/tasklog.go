package executor

import (
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/beluga-scheduler/beluga/common/logspan"
	"github.com/beluga-scheduler/beluga/common/secret"
	"golang.org/x/sys/unix"
)

// A process task's stdout and stderr are two pipes, copied into the one
// log under taskLog's lock, so the log stays the interleaved text it
// always was, and which bytes came from stderr goes to a sidecar
// (logspan), created only when stderr has output.
//
// One pipe for both (as before) keeps the exact order of the task's
// writes but cannot tell them apart: a pipe does not say which descriptor
// wrote. With two, the order across streams is what the worker sees, so
// every read happens under the lock, and whoever reads drains stdout
// before it writes stderr: output that waits on both pipes at once (the
// task wrote to both faster than the worker woke, `echo out; echo err
// >&2`) is logged stdout first. Each stream's own order is exact; writes
// to both within a few microseconds may log stdout first whatever their
// order (and most programs block-buffer stdout anyway, so the order across
// streams was never their order of prints).
//
// A task without output costs one pipe and two reads more than before
// (logPipe makes each pipe cheaper than os.Pipe did): nothing is opened,
// the sidecar is never created.

// logPipe makes a task output pipe: its read end non-blocking, in the
// runtime's poller; its write end, the child's, blocking and outside it.
// os.Pipe would make both non-blocking and polled, and StartProcess then
// make the write end blocking again: six more syscalls a pipe, on every
// task's start.
func logPipe() (r, w *os.File, err error) {
	var p [2]int
	if err := syscall.Pipe2(p[:], syscall.O_CLOEXEC); err != nil {
		return nil, nil, fmt.Errorf("log pipe: %w", err)
	}
	if _, err := unix.FcntlInt(uintptr(p[0]), syscall.F_SETFL, syscall.O_NONBLOCK); err != nil {
		syscall.Close(p[0])
		syscall.Close(p[1])
		return nil, nil, fmt.Errorf("log pipe: %w", err)
	}
	return os.NewFile(uintptr(p[0]), "|0"), os.NewFile(uintptr(p[1]), "|1"), nil
}

// taskLog is the log both copiers write into.
type taskLog struct {
	mu    sync.Mutex
	open  func() (*os.File, error) // at the first output (emptylog.go)
	f     *os.File
	err   error // opening failed: output is dropped, the task runs on
	size  int64 // the log's size, the offset of the next byte
	limit int64 // Config.MaxLogBytes
	full  bool  // nothing more is written: at the cap (after the marker), or a write failed
	cut   bool  // reached the cap in this run: the next byte writes the marker
	spans *logspan.Writer
	out   outputScanner // setValue lines; read once both copiers ended
}

// writeLocked adds p, read from stdout or stderr (isErr), to the log. The
// outputs parser sees every byte in log order, as when both streams
// shared one pipe.
func (l *taskLog) writeLocked(p []byte, isErr bool) {
	if len(p) == 0 {
		return
	}
	_, _ = l.out.Write(p)
	if l.f == nil && l.err == nil && !l.full {
		l.openLog()
	}
	if l.f == nil || l.full {
		return
	}
	if room := l.limit - l.size; room > 0 {
		k := min(int64(len(p)), room)
		if isErr {
			// Before the bytes: whoever read them finds their span.
			_ = l.spans.Add(l.size, k) // a failure drops the marks, never the log
		}
		if _, err := l.f.Write(p[:k]); err != nil {
			l.full = true
			return
		}
		l.size += k
		p = p[k:]
		l.cut = l.size >= l.limit
	}
	if len(p) > 0 && l.cut {
		// The marker once, when output goes past the cap.
		_, _ = l.f.WriteString(logMarker(l.limit))
		l.full = true
	}
}

func (l *taskLog) openLog() {
	f, err := l.open()
	if err != nil {
		l.err = err
		return
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		l.err = err
		return
	}
	l.f, l.size = f, fi.Size()
	// A log at its cap already (an earlier attempt's) gets nothing more.
	l.full = l.size >= l.limit
}

// close ends the log once both copiers ended.
func (l *taskLog) close() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.out.close()
	if l.f != nil {
		l.f.Close()
	}
	_ = l.spans.Close()
}

// copyBufs are the copiers' read buffers: most tasks print little, and a
// buffer per task would otherwise be garbage a few ms later.
var copyBufs = sync.Pool{New: func() any { b := make([]byte, 64<<10); return &b }}

// stream is one of a task's output pipes.
type stream struct {
	f    *os.File
	rc   syscall.RawConn
	fd   int
	mask *secret.Masker
	eof  bool // under the log's lock
}

// logCopy is the pair of goroutines moving a task's output from its pipes
// into its log: each waits for its pipe, then reads under the log's lock.
type logCopy struct {
	s    [2]stream // stdout, stderr
	left atomic.Int32
	done chan struct{} // both copiers ended and the log is closed
	log  taskLog
}

// newCopy prepares copying stdout and stderr into the log at logPath,
// capped at limit, secrets masked before anything sees the output; start
// starts it.
func newCopy(stdout, stderr *os.File, open func() (*os.File, error), logPath string, secrets []string, limit int64) (*logCopy, error) {
	c := &logCopy{done: make(chan struct{})}
	c.log.open, c.log.limit = open, limit
	c.log.spans = logspan.NewWriter(logspan.Path(logPath))
	for i, f := range []*os.File{stdout, stderr} {
		rc, err := f.SyscallConn()
		if err == nil {
			// Not f.Fd(): that would make the pipe blocking.
			err = rc.Control(func(fd uintptr) { c.s[i].fd = int(fd) })
		}
		if err != nil {
			return nil, fmt.Errorf("log pipe: %w", err)
		}
		c.s[i].f, c.s[i].mask, c.s[i].rc = f, secret.NewFilter(secrets), rc
	}
	return c, nil
}

func (c *logCopy) start() {
	c.left.Store(2)
	for i := range c.s {
		go c.copy(c.s[i].rc, i)
	}
}

// copy is stream i's goroutine: until its pipe's end (or the drain
// deadline, finish), each time it is readable it reads under the lock.
func (c *logCopy) copy(rc syscall.RawConn, i int) {
	bp := copyBufs.Get().(*[]byte)
	_ = rc.Read(func(uintptr) bool { return c.drain(i, *bp) })
	copyBufs.Put(bp)
	if c.left.Add(-1) == 0 {
		c.log.mu.Lock()
		for k := range c.s {
			c.log.writeLocked(c.s[k].mask.End(), k == 1)
		}
		c.log.mu.Unlock()
		for k := range c.s {
			c.s[k].f.Close()
		}
		c.log.close()
		close(c.done)
	}
}

// drain reads stream i until it would block and reports its end. Before
// stderr's bytes are written, stdout is drained: see the comment above.
func (c *logCopy) drain(i int, buf []byte) bool {
	c.log.mu.Lock()
	defer c.log.mu.Unlock()
	if i == 0 {
		c.pump(0, buf)
		return c.s[0].eof
	}
	// One read first: a silent stderr costs one read per wake.
	held, rest := buf[:len(buf)/2], buf[len(buf)/2:]
	n := c.readOnce(1, held)
	if n <= 0 {
		return c.s[1].eof
	}
	c.pump(0, rest)
	c.put(1, held[:n])
	c.pump(1, rest)
	return c.s[1].eof
}

// pump copies stream i into the log until its pipe would block or ends.
func (c *logCopy) pump(i int, buf []byte) {
	for {
		n := c.readOnce(i, buf)
		if n <= 0 {
			return
		}
		c.put(i, buf[:n])
	}
}

func (c *logCopy) put(i int, p []byte) { c.log.writeLocked(c.s[i].mask.Feed(p), i == 1) }

// readOnce reads stream i once: 0 or less means it would block, or ended
// (eof set; a failed read is taken as the end).
func (c *logCopy) readOnce(i int, buf []byte) int {
	s := &c.s[i]
	if s.eof {
		return 0
	}
	for {
		n, err := syscall.Read(s.fd, buf)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case errors.Is(err, syscall.EAGAIN):
			return -1
		case err != nil || n == 0:
			s.eof = true
			return 0
		}
		return n
	}
}

// finish waits for the copy to drain, at most logDrainGrace.
func (c *logCopy) finish() {
	select {
	case <-c.done:
	case <-time.After(logDrainGrace):
		for _, s := range c.s {
			_ = s.f.SetReadDeadline(time.Now())
		}
		<-c.done
	}
}
