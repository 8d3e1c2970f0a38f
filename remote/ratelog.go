package remote

import (
	"sync"
	"time"
)

// logLimit rate-limits a kind of log line, so that a flood of bad peers
// cannot flood the log: a burst of lines, then one per every. It counts the
// lines it dropped so the next one it lets through can say so. Safe for
// concurrent use (event loops, the accept loop, the sweeper).
type logLimit struct {
	burst int
	every time.Duration

	mu         sync.Mutex
	tokens     float64
	last       time.Time
	suppressed int
}

func newLogLimit(burst int, every time.Duration) *logLimit {
	return &logLimit{burst: max(burst, 1), every: every}
}

// allow reports whether a line may be logged at now, and how many were
// dropped since the last one allowed.
func (r *logLimit) allow(now time.Time) (suppressed int, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last.IsZero() {
		r.tokens = float64(r.burst)
	} else if r.every > 0 {
		r.tokens = min(float64(r.burst), r.tokens+float64(now.Sub(r.last))/float64(r.every))
	}
	r.last = now
	if r.tokens < 1 {
		r.suppressed++
		return 0, false
	}
	r.tokens--
	n := r.suppressed
	r.suppressed = 0
	return n, true
}
