package master

import (
	"context"
	"runtime"
	"strings"
	"testing"
)

// TestTermContextCancelWaitsForItsGoroutine: the goroutine termContext
// starts (to end the term when leadership is lost) is owned: once cancel
// returns it has exited, so a term leaves nothing behind.
func TestTermContextCancelWaitsForItsGoroutine(t *testing.T) {
	for i := range 200 {
		lost := make(chan struct{})
		ctx, cancel := termContext(context.Background(), lost)
		if i%2 == 0 {
			close(lost) // ended by the election
			<-ctx.Done()
		}
		cancel()
		cancel() // twice: harmless
		if n := goroutinesIn("master.termContext"); n != 0 {
			t.Fatalf("round %d: %d termContext goroutines still running after cancel returned", i, n)
		}
	}
}

func goroutinesIn(fn string) int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, fn) {
			n++
		}
	}
	return n
}
