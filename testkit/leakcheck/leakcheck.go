// Package leakcheck fails a test binary whose tests left goroutines
// running: every component's Stop must return only after its goroutines
// exited.
package leakcheck

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Run runs the tests and returns their exit code, or 1 when, after they
// passed, more goroutines run than before them (waiting up to 5 s for
// stragglers to finish). Call it from TestMain: os.Exit(leakcheck.Run(m)).
// cleanup runs after the tests and before the check: it stops what the
// package's tests share (a test server), whatever their outcome.
func Run(m *testing.M, cleanup ...func()) int {
	base, _ := running()
	code := m.Run()
	for _, c := range cleanup {
		c()
	}
	if code != 0 {
		return code
	}
	deadline := time.Now().Add(5 * time.Second)
	n, stacks := running()
	for n > base && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // polling: nothing signals a goroutine's end
		n, stacks = running()
	}
	if n > base {
		fmt.Fprintf(os.Stderr, "goroutine leak: %d running, %d before tests\n%s\n", n, base, stacks)
		return 1
	}
	return 0
}

// forever are goroutines started once for the process and never ended: not
// leaks.
var forever = []string{
	"os/signal.loop",                  // the first signal.Notify starts it for the process
	"internal/lifeline.(*Pool).start", // the forking threads (lifeline.Do, the task sandbox's)
}

// running counts the goroutines that are not in forever, and returns all
// stacks for the report.
func running() (int, string) {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	all := string(buf)
	count := 0
	for _, g := range strings.Split(all, "\n\n") {
		if !strings.HasPrefix(g, "goroutine ") || ownedByRuntime(g) {
			continue
		}
		count++
	}
	return count, all
}

func ownedByRuntime(stack string) bool {
	for _, f := range forever {
		if strings.Contains(stack, f) {
			return true
		}
	}
	return false
}
