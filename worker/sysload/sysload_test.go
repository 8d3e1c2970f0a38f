package sysload

import (
	"math"
	"os"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func read(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseCPU(t *testing.T) {
	t0, err := ParseCPU(read(t, "testdata/t0/stat"))
	if err != nil || t0 != (CPUTimes{Busy: 1600, Total: 10000}) {
		t.Fatalf("t0 = %+v, %v; want busy 1600 of 10000", t0, err)
	}
	// The guest column (200) is inside user already: not added again.
	t1, err := ParseCPU(read(t, "testdata/t1/stat"))
	if err != nil || t1 != (CPUTimes{Busy: 2500, Total: 11800}) {
		t.Fatalf("t1 = %+v, %v; want busy 2500 of 11800", t1, err)
	}
	if p := CPUPercent(t0, t1); !near(p, 50) {
		t.Fatalf("cpu percent = %v, want 50", p)
	}
	if p := CPUPercent(t1, t1); p != 0 {
		t.Fatalf("cpu percent with no tick = %v, want 0", p)
	}
	if p := CPUPercent(t1, t0); p != 0 {
		t.Fatalf("cpu percent of counters going back = %v, want 0", p)
	}
	old, err := ParseCPU(read(t, "testdata/old/stat"))
	if err != nil || old != (CPUTimes{Busy: 400, Total: 1000}) {
		t.Fatalf("old = %+v, %v; want busy 400 of 1000", old, err)
	}
	for name, in := range map[string]string{
		"empty":      "",
		"no cpu":     "cpu0 1 2 3 4 5\nintr 1\n",
		"short":      "cpu 1 2 3\n",
		"not number": "cpu 1 2 x 4 5\n",
		"negative":   "cpu 1 2 -3 4 5\n",
	} {
		if _, err := ParseCPU([]byte(in)); err == nil {
			t.Errorf("%s: ParseCPU(%q) gave no error", name, in)
		}
	}
}

func TestParseMemory(t *testing.T) {
	if p, err := ParseMemory(read(t, "testdata/t0/meminfo")); err != nil || !near(p, 75) {
		t.Fatalf("memory = %v, %v; want 75", p, err)
	}
	// No MemAvailable: free + buffers + cached = 400 of 1000 kB.
	if p, err := ParseMemory(read(t, "testdata/old/meminfo")); err != nil || !near(p, 60) {
		t.Fatalf("old memory = %v, %v; want 60", p, err)
	}
	for name, in := range map[string]string{
		"empty":      "",
		"zero total": "MemTotal: 0 kB\nMemAvailable: 0 kB\n",
		"garbage":    "MemTotal: lots\n",
	} {
		if _, err := ParseMemory([]byte(in)); err == nil {
			t.Errorf("%s: ParseMemory(%q) gave no error", name, in)
		}
	}
	// More available than total (a racy read): clamped, never negative.
	if p, err := ParseMemory([]byte("MemTotal: 10 kB\nMemAvailable: 20 kB\n")); err != nil || p != 0 {
		t.Fatalf("clamped memory = %v, %v; want 0", p, err)
	}
}

func TestParseLoad(t *testing.T) {
	if l, err := ParseLoad(read(t, "testdata/t1/loadavg")); err != nil || !near(l, 3.25) {
		t.Fatalf("load = %v, %v; want 3.25", l, err)
	}
	for _, in := range []string{"", "  \n", "x 1 2", "-1 0 0"} {
		if _, err := ParseLoad([]byte(in)); err == nil {
			t.Errorf("ParseLoad(%q) gave no error", in)
		}
	}
}

func TestSampler(t *testing.T) {
	s := NewSampler("testdata/t0")
	s.dir = "testdata/t1" // the host one sample later
	u, err := s.Sample()
	if err != nil {
		t.Fatal(err)
	}
	if !near(u.CPU, 50) || !near(u.Memory, 75) || !near(u.Load, 3.25) {
		t.Fatalf("usage = %+v, want cpu 50, memory 75, load 3.25", u)
	}
	// Unchanged counters: no tick passed.
	if u, err = s.Sample(); err != nil || u.CPU != 0 {
		t.Fatalf("second sample = %+v, %v; want cpu 0", u, err)
	}
	missing := NewSampler(t.TempDir())
	if u, err := missing.Sample(); err == nil || u != (Usage{}) {
		t.Fatalf("sample of an empty dir = %+v, %v; want zeros and an error", u, err)
	}
}

// TestSamplerLive reads this host's /proc: figures in range, no error.
func TestSamplerLive(t *testing.T) {
	if _, err := os.Stat("/proc/stat"); err != nil {
		t.Skip("no /proc")
	}
	u, err := NewSampler("").Sample()
	if err != nil {
		t.Fatal(err)
	}
	if u.CPU < 0 || u.CPU > 100 || u.Memory <= 0 || u.Memory > 100 || u.Load < 0 {
		t.Fatalf("live usage out of range: %+v", u)
	}
}
