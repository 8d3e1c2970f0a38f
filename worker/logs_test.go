package worker

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/common/logspan"
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
	// Not parallel: TotalAlloc counts every goroutine's allocations, and a
	// parallel test's pushed this one over its bound (seen in a full run).
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

// TestLogRequestStreams: asked for streams, a worker answers a window's
// stderr spans; a window with more spans than a response holds ends where
// the first one left off starts; a log without a span file has none.
func TestLogRequestStreams(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{})
	dir := filepath.Join(b.dir, "logs", "3")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "1.log")
	n := int64(MaxLogSpans + 10)
	if err := os.WriteFile(path, bytes.Repeat([]byte("e\n"), int(n)), 0o644); err != nil {
		t.Fatal(err)
	}
	w := logspan.NewWriter(logspan.Path(path))
	for i := int64(0); i < n; i++ {
		_ = w.Add(2*i, 1) // "e" is stderr, each newline stdout
	}
	w.Close()
	ask := func(req message.LogRequest) message.LogResponse {
		t.Helper()
		m, err := b.rpc.Request(ctxT(t), b.w.Addr(), req)
		if err != nil {
			t.Fatal(err)
		}
		return m.(message.LogResponse)
	}
	r := ask(message.LogRequest{TaskInstanceID: 1, LogPath: path, Offset: 1, Limit: 5, Streams: true})
	if !r.Streams || string(r.Data) != "\ne\ne\n" || !reflect.DeepEqual(r.Stderr, [][2]int64{{2, 3}, {4, 5}}) {
		t.Fatalf("window 1+5: %+v", r)
	}
	r = ask(message.LogRequest{TaskInstanceID: 1, LogPath: path, Streams: true})
	if len(r.Stderr) != MaxLogSpans || r.EOF || int64(len(r.Data)) != 2*MaxLogSpans {
		t.Fatalf("a window of %d spans: %d spans, %d bytes, eof %v", n, len(r.Stderr), len(r.Data), r.EOF)
	}
	if r := ask(message.LogRequest{TaskInstanceID: 1, LogPath: path, Limit: 4}); r.Streams || r.Stderr != nil || len(r.Data) != 4 {
		t.Fatalf("without Streams: %+v", r)
	}
	os.Remove(logspan.Path(path))
	if r := ask(message.LogRequest{TaskInstanceID: 1, LogPath: path, Limit: 4, Streams: true}); !r.Streams || len(r.Stderr) != 0 || len(r.Data) != 4 {
		t.Fatalf("no span file: %+v", r)
	}
}
