package worker

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/remote"
	"github.com/beluga-scheduler/beluga/remote/message"
)

// TestLogRequestRefusesSymlinks: a symlink in the log directory (a task can
// make one) is not followed, whether it names a file outside the directory
// or is a task's own log replaced by a link.
func TestLogRequestRefusesSymlinks(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	secret := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(secret, []byte("root:x:0:0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	logs := filepath.Join(b.dir, "logs")
	// A task replaces its own log by a link, and plants another one.
	d := b.dispatchMsg(1, "ln -sf "+secret+" \"$0\"; mkdir -p "+logs+"/9; ln -s "+secret+" "+logs+"/9/9.log; ln -s / "+logs+"/root")
	d.Command = strings.Replace(d.Command, "\"$0\"", logs+"/3/1.log", 1)
	if r := b.dispatch(t, d); !r.Accepted {
		t.Fatalf("dispatch %+v", r)
	}
	if res := waitReport[message.Result](t, b.master, 1); res.State != "succeeded" {
		t.Fatalf("task: %+v", res)
	}
	for _, req := range []message.LogRequest{
		{TaskInstanceID: 1},
		{TaskInstanceID: 1, LogPath: filepath.Join(logs, "3", "1.log")},
		{LogPath: filepath.Join(logs, "9", "9.log")},
		{LogPath: filepath.Join(logs, "root", "etc", "passwd")},
	} {
		r, err := b.rpc.Request(ctxT(t), b.w.Addr(), req)
		var re *remote.RemoteError
		if !errors.As(err, &re) {
			t.Fatalf("log request %+v: %+v, %v; want an Error reply", req, r, err)
		}
		if lr, ok := r.(message.LogResponse); ok && bytes.Contains(lr.Data, []byte("root:x")) {
			t.Fatalf("log request %+v read the linked file", req)
		}
	}
	// A request naming another task's log by path is refused too.
	if _, err := b.rpc.Request(ctxT(t), b.w.Addr(), message.LogRequest{TaskInstanceID: 2, LogPath: filepath.Join(logs, "3", "1.log")}); err == nil {
		t.Fatal("task 2's request read task 1's log")
	}
}

// TestLogReadWindowBounded: one read of a large log holds a bounded window,
// not the whole 8 MiB the protocol allowed.
func TestLogReadWindowBounded(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "3", "1.log")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, bytes.Repeat([]byte("0123456789abcde\n"), 1<<20), 0o644); err != nil { // 16 MiB
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	data, eof, err := readLog(dir, path, 0, 0)
	runtime.ReadMemStats(&after)
	if err != nil || eof {
		t.Fatalf("readLog: %d bytes, eof %v, %v", len(data), eof, err)
	}
	if len(data) != MaxLogChunk || MaxLogChunk > 1<<20 {
		t.Fatalf("read %d bytes, MaxLogChunk %d: want a window of at most 1 MiB", len(data), MaxLogChunk)
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 2<<20 {
		t.Fatalf("one read allocated %d bytes", alloc)
	}
}
