package master

import (
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"
)

func TestReadOffset(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct {
		content string
		want    time.Duration
	}{
		{"+20s", 20 * time.Second},
		{"-1m\n", -time.Minute},
		{"1.5s", 1500 * time.Millisecond},
		{"", 0},
		{"soon", 0},
	} {
		p := filepath.Join(dir, "off")
		if err := os.WriteFile(p, []byte(tc.content), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := readOffset(p); got != tc.want {
			t.Errorf("readOffset(%q) = %v, want %v", tc.content, got, tc.want)
		}
	}
	if got := readOffset(filepath.Join(dir, "missing")); got != 0 {
		t.Errorf("a missing file: %v, want 0", got)
	}
}

// The clock follows its file: a step forward, then back to the real time.
func TestOffsetClockSteps(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "off")
	c := newOffsetClock(p, zap.NewNop())
	near := func(want time.Duration) bool {
		d := c.Now().Sub(time.Now()) - want
		return d > -time.Second && d < time.Second
	}
	if !near(0) {
		t.Fatalf("without a file: %v off the real time", c.Now().Sub(time.Now()))
	}
	for _, step := range []time.Duration{time.Hour, 0} {
		if err := os.WriteFile(p, []byte(step.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		// The clock rereads its file on its own schedule: its offset is
		// observed from outside.
		wait.UntilErr(t, 10*time.Second, fmt.Sprintf("the clock to take offset %v", step), func() error {
			if !near(step) {
				return fmt.Errorf("%v off", c.Now().Sub(time.Now()))
			}
			return nil
		})
	}
}
