// Package wait is the one way tests wait: on a condition polled with
// backoff, or on a channel signal, each under a deadline, failing with
// what was awaited. A test that sleeps instead either waits too long on
// an idle machine or too little on a loaded one.
package wait

import (
	"fmt"
	"testing"
	"time"
)

// The polling pause starts short, so a condition that holds soon is seen
// soon, and doubles to a cap, so a long wait does not spin the CPU the
// code under test needs. A check slower than the pause (a query, a docker
// command) is paused for as long as it took: it runs at most half the time.
const (
	firstPause = time.Millisecond
	maxPause   = 50 * time.Millisecond
)

// Poll checks cond until it holds (nil) or within passes (an error naming
// what). It is for kits that report errors rather than fail a test.
func Poll(within time.Duration, what string, cond func() bool) error {
	deadline := time.Now().Add(within)
	pause := firstPause
	for {
		began := time.Now()
		if cond() {
			return nil
		}
		took := time.Since(began)
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("timed out after %v waiting for %s", within, what)
		}
		t := time.NewTimer(min(max(pause, took), left))
		<-t.C
		pause = min(pause*2, maxPause)
	}
}

// Until checks cond until it holds, or fails t naming what it waited for
// once within passes.
func Until(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := Poll(within, what, cond); err != nil {
		t.Fatal(err)
	}
}

// UntilErr is Until for a check that says why it does not hold yet: the
// last error is in the failure.
func UntilErr(t testing.TB, within time.Duration, what string, check func() error) {
	t.Helper()
	var last error
	if err := Poll(within, what, func() bool { last = check(); return last == nil }); err != nil {
		t.Fatalf("%v: last: %v", err, last)
	}
}

// Signal waits for a value (or the close) on ch and returns it, or fails t
// naming what it waited for once within passes.
func Signal[T any](t testing.TB, within time.Duration, what string, ch <-chan T) T {
	t.Helper()
	timer := time.NewTimer(within)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("timed out after %v waiting for %s", within, what)
		panic("unreachable") // Fatalf ends the goroutine
	}
}

// Quiet checks that ch delivers nothing for d: time is the subject here,
// the wait a signal must not end.
func Quiet[T any](t testing.TB, d time.Duration, what string, ch <-chan T) {
	t.Helper()
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case v := <-ch:
		t.Fatalf("%s: got %v within %v, want nothing", what, v, d)
	case <-timer.C:
	}
}
