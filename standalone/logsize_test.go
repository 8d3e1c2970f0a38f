package standalone_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/common/registry"
	"github.com/beluga-scheduler/beluga/remote"
	"github.com/beluga-scheduler/beluga/standalone"
	"github.com/beluga-scheduler/beluga/worker"
)

// deadAddr is a loopback address nothing listens on.
func deadAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// TestLogBytesAsksEachLogDirOnce: a plan's log bytes come from a real
// worker's files; a dead address announcing the same log directory on the
// same host is not counted apart (whichever is asked first), and a log
// directory no worker answers for is counted unreached.
func TestLogBytesAsksEachLogDirOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w, err := worker.New(worker.Config{Listen: "127.0.0.1:0", DataDir: t.TempDir(), LogSweep: -1, TaskIsolation: "off"}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	for path, size := range map[string]int{"7/1.log": 100, "7/1.stderr": 16, "8/2.log": 1000, "9/3.log": 5} {
		full := filepath.Join(w.LogDir(), path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, make([]byte, size), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	reg := registry.NewMemory()
	for _, n := range []registry.Node{
		{Role: registry.RoleWorker, Addr: deadAddr(t), LogDir: w.LogDir()}, // its earlier run, gone
		{Role: registry.RoleWorker, Addr: w.Addr(), LogDir: w.LogDir()},
		{Role: registry.RoleWorker, Addr: deadAddr(t), LogDir: "/elsewhere/logs"},
	} {
		if err := reg.Register(ctx, n); err != nil {
			t.Fatal(err)
		}
	}
	c := remote.NewClient(nil, remote.Options{})
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	sz, ok := standalone.LogFetcher(c, reg).(api.LogSizer)
	if !ok {
		t.Fatal("the log fetcher does not measure logs")
	}
	bytes, unreached := sz.LogBytes(ctx, []int64{7, 8, 10})
	if bytes != 1116 || unreached != 1 {
		t.Fatalf("log bytes %d, unreached %d; want 1116 and 1", bytes, unreached)
	}
}
