package master

import (
	"os"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// ClockOffsetFileEnv names a file whose content (a Go duration, "+20s",
// "-1m"; empty or missing: 0) is added to the time the master's scheduler
// and state wheel read: a step of the host's clock as they would see it,
// for the soak (tests/soak) to inject. Timers keep running on the
// monotonic clock, as they do across a real step. Unset in production.
const ClockOffsetFileEnv = "BELUGA_CLOCK_OFFSET_FILE"

// offsetClock is the real clock plus the offset its file says, read again
// at most every offsetReread.
type offsetClock struct {
	path string
	log  *zap.Logger

	mu     sync.Mutex
	off    time.Duration
	readAt time.Time // monotonic: when the file was last read
}

const offsetReread = 100 * time.Millisecond

func newOffsetClock(path string, log *zap.Logger) *offsetClock {
	return &offsetClock{path: path, log: log}
}

func (c *offsetClock) Now() time.Time {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.readAt.IsZero() || now.Sub(c.readAt) >= offsetReread {
		c.readAt = now
		if off := readOffset(c.path); off != c.off {
			c.log.Warn("clock stepped (test knob)", zap.String("file", c.path), zap.Duration("offset", off), zap.Duration("step", off-c.off))
			c.off = off
		}
	}
	return now.Add(c.off)
}

func (c *offsetClock) After(d time.Duration) <-chan time.Time { return time.After(d) }

// readOffset is the offset a file says: 0 when it is missing, empty or
// not a duration.
func readOffset(path string) time.Duration {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	d, err := time.ParseDuration(strings.TrimPrefix(strings.TrimSpace(string(b)), "+"))
	if err != nil {
		return 0
	}
	return d
}
