package wait

import (
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// recorder is a testing.TB that records a failure instead of ending the
// test, so the helpers' own failures can be checked.
type recorder struct {
	testing.TB
	failed atomic.Bool
	msg    atomic.Value
}

func (r *recorder) Helper() {}
func (r *recorder) Fatal(args ...any) {
	r.failed.Store(true)
	r.msg.Store(fmt.Sprint(args...))
	panic(fatal{})
}
func (r *recorder) Fatalf(format string, args ...any) { r.Fatal(fmt.Sprintf(format, args...)) }

type fatal struct{}

// run calls f with r, absorbing the panic its Fatal uses to end f early as
// testing.T's Goexit would.
func run(r *recorder, f func(testing.TB)) {
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(fatal); !ok {
				panic(p)
			}
		}
	}()
	f(r)
}

func TestPoll(t *testing.T) {
	for _, tc := range []struct {
		name    string
		holdsAt int // the call on which cond first holds; 0: never
		within  time.Duration
		wantErr bool
	}{
		{"holds at once", 1, time.Second, false},
		{"holds later", 5, 5 * time.Second, false},
		{"never holds", 0, 30 * time.Millisecond, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			calls := 0
			err := Poll(tc.within, "the thing", func() bool { calls++; return tc.holdsAt != 0 && calls >= tc.holdsAt })
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if tc.wantErr && !strings.Contains(err.Error(), "the thing") {
				t.Fatalf("error %q does not name what was awaited", err)
			}
			if !tc.wantErr && calls != tc.holdsAt {
				t.Fatalf("cond called %d times, want %d (stop as soon as it holds)", calls, tc.holdsAt)
			}
		})
	}
}

func TestUntilFailsNamingWhat(t *testing.T) {
	r := &recorder{TB: t}
	run(r, func(tb testing.TB) { Until(tb, 20*time.Millisecond, "the door to open", func() bool { return false }) })
	if !r.failed.Load() || !strings.Contains(r.msg.Load().(string), "the door to open") {
		t.Fatalf("failed=%v msg=%v, want a failure naming the door", r.failed.Load(), r.msg.Load())
	}
	r = &recorder{TB: t}
	run(r, func(tb testing.TB) { Until(tb, time.Second, "true", func() bool { return true }) })
	if r.failed.Load() {
		t.Fatalf("Until failed on a condition that holds: %v", r.msg.Load())
	}
}

func TestUntilErrKeepsLastError(t *testing.T) {
	r := &recorder{TB: t}
	run(r, func(tb testing.TB) {
		UntilErr(tb, 20*time.Millisecond, "the row", func() error { return errString("status is queued") })
	})
	if msg, _ := r.msg.Load().(string); !strings.Contains(msg, "the row") || !strings.Contains(msg, "status is queued") {
		t.Fatalf("msg = %q, want what and the last error", msg)
	}
}

func TestSignal(t *testing.T) {
	ch := make(chan int, 1)
	go func() { ch <- 7 }()
	if got := Signal(t, 10*time.Second, "seven", ch); got != 7 {
		t.Fatalf("Signal = %d, want 7", got)
	}
	r := &recorder{TB: t}
	run(r, func(tb testing.TB) { Signal(tb, 20*time.Millisecond, "a bell", make(chan struct{})) })
	if msg, _ := r.msg.Load().(string); !strings.Contains(msg, "a bell") {
		t.Fatalf("msg = %q, want a failure naming the bell", msg)
	}
}

func TestQuiet(t *testing.T) {
	// Time is the subject: nothing may arrive for the whole span.
	Quiet(t, 10*time.Millisecond, "silence", make(chan struct{}))
	ch := make(chan int, 1)
	ch <- 1
	r := &recorder{TB: t}
	run(r, func(tb testing.TB) { Quiet(tb, time.Second, "silence", ch) })
	if !r.failed.Load() {
		t.Fatal("Quiet passed with a value waiting")
	}
}

type errString string

func (e errString) Error() string { return string(e) }
