package executor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/common/logspan"
	"github.com/beluga-scheduler/beluga/common/secret"
)

// inOrder is a shell prelude: w TEXT waits until the task's log ($LOGF)
// holds TEXT, so the next print is surely later than the last one reached
// the worker (output to two pipes is otherwise ordered by arrival).
const inOrder = `w() { until grep -qF -- "$1" "$LOGF" 2>/dev/null; do sleep 0.01; done; }; `

// spansOf reads the task's stderr spans; none without a sidecar.
func spansOf(t *testing.T, logPath string) []logspan.Span {
	t.Helper()
	f, err := os.Open(logspan.Path(logPath))
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, _, _, err := logspan.Read(f, 0, 1<<62, 0)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// spansFor are the spans of the parts of log at odd indexes (stderr's).
func spansFor(parts []string) (string, []logspan.Span) {
	var log strings.Builder
	var out []logspan.Span
	for i, p := range parts {
		if i%2 == 1 && p != "" {
			out = append(out, logspan.Span{Start: int64(log.Len()), End: int64(log.Len() + len(p))})
		}
		log.WriteString(p)
	}
	return log.String(), out
}

// TestStderrIsMarkedInTheCombinedLog: a task interleaving stdout and
// stderr keeps one log of both in order, and the sidecar names the bytes
// that were stderr, a partial stdout line included; a secret is masked on
// stderr too, and setValue lines count on either stream, as when both
// shared one pipe.
func TestStderrIsMarkedInTheCombinedLog(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{sameUser: true})
	logPath := filepath.Join(b.dir, "logs", "7", "1.log")
	d := dispatch(1, inOrder+`echo out1; w out1; echo err1 >&2; w err1; printf part; w part; `+
		`echo " err2 $TOKEN" >&2; w err2; echo 'out3 ${setValue(a=1)}'; w out3; echo '${setValue(b=2)}' >&2`)
	d.Env = map[string]string{"LOGF": logPath, "TOKEN": "hunter2-secret"}
	d.SecretEnv = []string{"TOKEN"}
	b.mustDispatch(t, d)
	res := b.waitResult(t, 1)
	if res.State != "succeeded" || res.Outputs["a"] != "1" || res.Outputs["b"] != "2" {
		t.Fatalf("result %+v, want succeeded with outputs a=1 (stdout) and b=2 (stderr)", res)
	}
	got, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	want, wantSpans := spansFor([]string{"out1\n", "err1\n", "part", " err2 " + secret.Mask + "\n",
		"out3 ${setValue(a=1)}\n", "${setValue(b=2)}\n"})
	if string(got) != want {
		t.Fatalf("log = %q, want %q", got, want)
	}
	if s := spansOf(t, logPath); !equalSpans(s, wantSpans) {
		t.Fatalf("stderr spans %v, want %v", s, wantSpans)
	}
	// The filters split the log in two.
	if e := logspan.Filter(nil, got, 0, wantSpans, true); string(e) != "err1\n err2 "+secret.Mask+"\n${setValue(b=2)}\n" {
		t.Fatalf("stderr alone = %q", e)
	}
	if o := logspan.Filter(nil, got, 0, wantSpans, false); string(o) != "out1\npartout3 ${setValue(a=1)}\n" {
		t.Fatalf("stdout alone = %q", o)
	}
}

// TestNoSidecarWithoutStderr: a task that prints nothing or only on
// stdout gets no span file (the common task pays nothing for the marks).
func TestNoSidecarWithoutStderr(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{sameUser: true})
	b.mustDispatch(t, dispatch(1, "true"))
	b.mustDispatch(t, dispatch(2, "echo only out"))
	b.waitResult(t, 1)
	b.waitResult(t, 2)
	for _, id := range []string{"1", "2"} {
		if _, err := os.Stat(logspan.Path(filepath.Join(b.dir, "logs", "7", id+".log"))); !os.IsNotExist(err) {
			t.Fatalf("task %s: span file %v, want none", id, err)
		}
	}
}

// TestStderrSpansStopAtTheCap: the cap holds for both streams together,
// and the marker is not stderr.
func TestStderrSpansStopAtTheCap(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{MaxLogBytes: 40, sameUser: true})
	logPath := filepath.Join(b.dir, "logs", "7", "1.log")
	d := dispatch(1, inOrder+`printf 0123456789 >&2; w 0123456789; printf abcdefghij; w abcdefghij; printf ERR-OVER-THE-CAP-0123456789 >&2`)
	d.Env = map[string]string{"LOGF": logPath}
	b.mustDispatch(t, d)
	b.waitResult(t, 1)
	got, _ := os.ReadFile(logPath)
	want := "0123456789abcdefghijERR-OVER-THE-CAP-012" + logMarker(40)
	if string(got) != want {
		t.Fatalf("log = %q, want %q", got, want)
	}
	wantSpans := []logspan.Span{{Start: 0, End: 10}, {Start: 20, End: 40}}
	if s := spansOf(t, logPath); !equalSpans(s, wantSpans) {
		t.Fatalf("spans %v, want %v", s, wantSpans)
	}
}

func equalSpans(a, b []logspan.Span) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
