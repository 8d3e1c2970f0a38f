package events

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"

	"github.com/beluga-scheduler/beluga/testkit/leakcheck"
)

func TestMain(m *testing.M) { os.Exit(leakcheck.Run(m)) }

func TestSignVerify(t *testing.T) {
	key, body := []byte("k"), []byte(`{"id":1}`)
	at := time.Unix(1700000000, 0)
	h := Sign(key, at, body)
	if got, err := Verify(key, h, body); err != nil || !got.Equal(at) {
		t.Fatalf("verify own signature: %v %v", got, err)
	}
	for name, c := range map[string]struct {
		key    string
		header string
		body   string
	}{
		"other body":   {"k", h, `{"id":2}`},
		"other key":    {"j", h, string(body)},
		"no timestamp": {"k", "v1=00", string(body)},
		"no mac":       {"k", "t=1", string(body)},
		"other time":   {"k", Sign(key, at.Add(time.Second), body)[:13] + h[13:], string(body)},
	} {
		if _, err := Verify([]byte(c.key), c.header, []byte(c.body)); err == nil {
			t.Errorf("%s: verified", name)
		}
	}
}

func evs(seqs ...int64) []model.Event {
	out := make([]model.Event, len(seqs))
	for i, s := range seqs {
		out[i] = model.Event{Seq: s, Project: fmt.Sprint("p", s%2)}
	}
	return out
}

func seqsOf(es []model.Event) string {
	var b strings.Builder
	for _, e := range es {
		fmt.Fprint(&b, e.Seq, " ")
	}
	return b.String()
}

func TestHub(t *testing.T) {
	var nilHub *Hub
	nilHub.Published(evs(1))
	if _, _, ok := nilHub.Since(0, model.EventFilter{}, 10); ok || nilHub.Wait() != nil {
		t.Fatal("a nil hub answers")
	}
	h := NewHub()
	if _, _, ok := h.Since(0, model.EventFilter{}, 10); ok {
		t.Fatal("an empty hub answers: events before it may exist")
	}
	w := h.Wait()
	select {
	case <-w:
		t.Fatal("woken before anything was published")
	default:
	}
	h.Published(evs(5, 6, 9))
	<-w
	h.Published(evs(10, 12))
	for _, c := range []struct {
		after int64
		f     model.EventFilter
		limit int
		want  string
		ok    bool
	}{
		{3, model.EventFilter{}, 10, "", false}, // 4 may exist, before the hub
		{4, model.EventFilter{}, 10, "5 6 9 10 12 ", true},
		{6, model.EventFilter{}, 2, "9 10 ", true},
		{4, model.EventFilter{Project: "p0"}, 10, "6 10 12 ", true},
		{12, model.EventFilter{}, 10, "", true},
	} {
		got, last, ok := h.Since(c.after, c.f, c.limit)
		if ok != c.ok || (ok && (seqsOf(got) != c.want || last != 12)) {
			t.Errorf("since %d %+v: %q %d %v, want %q %v", c.after, c.f, seqsOf(got), last, ok, c.want, c.ok)
		}
	}
	// Trimmed only past a quarter more than hubKeep, back to hubKeep.
	big := make([]int64, hubKeep)
	for i := range big {
		big[i] = int64(100 + i)
	}
	h.Published(evs(big...))
	if _, _, ok := h.Since(4, model.EventFilter{}, 1); !ok {
		t.Fatal("trimmed below a quarter over")
	}
	more := make([]int64, hubKeep/4)
	for i := range more {
		more[i] = int64(100 + hubKeep + i)
	}
	h.Published(evs(more...))
	first := int64(100 + hubKeep + hubKeep/4 - hubKeep) // the oldest kept
	if _, _, ok := h.Since(first-2, model.EventFilter{}, 1); ok {
		t.Fatal("answers for events it dropped")
	}
	if got, _, ok := h.Since(first-1, model.EventFilter{}, 1); !ok || seqsOf(got) != fmt.Sprintf("%d ", first) {
		t.Fatalf("after the trim: %q %v", seqsOf(got), ok)
	}
}
