package events

import (
	"testing"

	"github.com/beluga-scheduler/beluga/common/model"
)

// Last is the newest seq held, once anything was published; readers that
// start from it (an instance read's event_seq) then miss nothing the hub
// or the outbox holds after it.
func TestHubLast(t *testing.T) {
	var none *Hub
	if _, ok := none.Last(); ok {
		t.Fatal("a nil hub says it holds a seq")
	}
	h := NewHub()
	if _, ok := h.Last(); ok {
		t.Fatal("an empty hub says it holds a seq")
	}
	h.Published([]model.Event{{Seq: 7, Kind: model.EventTask}, {Seq: 8, Kind: model.EventInstance}})
	if seq, ok := h.Last(); !ok || seq != 8 {
		t.Fatalf("Last = %d, %v; want 8, true", seq, ok)
	}
	evs, _, ok := h.Since(6, model.EventFilter{Kinds: []string{model.EventInstance}}, 10)
	if !ok || len(evs) != 1 || evs[0].Seq != 8 {
		t.Fatalf("Since with kinds=instance: %+v, %v; want only seq 8", evs, ok)
	}
}
