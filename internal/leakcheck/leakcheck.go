// Package leakcheck fails a test binary whose tests left goroutines
// running: every component's Stop must return only after its goroutines
// exited.
package leakcheck

import (
	"fmt"
	"os"
	"runtime"
	"testing"
	"time"
)

// Run runs the tests and returns their exit code, or 1 when, after they
// passed, more goroutines run than before them (waiting up to 5 s for
// stragglers to finish). Call it from TestMain: os.Exit(leakcheck.Run(m)).
// cleanup runs after the tests and before the check: it stops what the
// package's tests share (a test server), whatever their outcome.
func Run(m *testing.M, cleanup ...func()) int {
	base := runtime.NumGoroutine()
	code := m.Run()
	for _, c := range cleanup {
		c()
	}
	if code != 0 {
		return code
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > base && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond) // polling: nothing signals a goroutine's end
	}
	if n := runtime.NumGoroutine(); n > base {
		buf := make([]byte, 1<<20)
		fmt.Fprintf(os.Stderr, "goroutine leak: %d running, %d before tests\n%s\n", n, base, buf[:runtime.Stack(buf, true)])
		return 1
	}
	return 0
}
