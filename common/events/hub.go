// Package events holds what the event stream's producers and readers share
// in-process: the hub that hands readers the events the publisher just
// numbered, and the webhook signature.
package events

import (
	"sync"

	"github.com/beluga-scheduler/beluga/common/model"
)

// hubKeep is how many of the newest published events a hub holds at least
// (up to a quarter more between trims).
const hubKeep = 20000

// Hub wakes readers in this process when events were published and keeps
// the newest of them, so readers that are caught up are served from memory
// rather than by another query on the database (on SQLite a query waits
// for the one connection writers use). In a cluster the API process has no
// hub and reads the outbox. A nil *Hub is valid: it holds nothing and
// never wakes anyone.
type Hub struct {
	mu    sync.Mutex
	ch    chan struct{}
	buf   []model.Event // in seq order
	floor int64         // every event with seq > floor is in buf (-1: none yet)
}

// NewHub returns a hub with nothing published yet.
func NewHub() *Hub { return &Hub{ch: make(chan struct{}), floor: -1} }

// Published hands over a batch the publisher numbered, in seq order, and
// wakes every waiter. Batches come from one publisher, in order: an event
// with a seq below a batch's first was published before it.
func (h *Hub) Published(evs []model.Event) {
	if h == nil || len(evs) == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.floor < 0 || (len(h.buf) > 0 && evs[0].Seq <= h.buf[len(h.buf)-1].Seq) {
		// the first batch, or a new term's publisher going back: start over
		h.buf, h.floor = h.buf[:0], evs[0].Seq-1
	}
	h.buf = append(h.buf, evs...)
	// Trimmed by a quarter at a time: a trim copies hubKeep events, so one
	// per publish would cost more than the publish.
	if n := len(h.buf) - hubKeep; n > hubKeep/4 {
		h.floor = h.buf[n-1].Seq
		h.buf = append(h.buf[:0], h.buf[n:]...)
	}
	close(h.ch)
	h.ch = make(chan struct{})
}

// Since returns up to limit held events after seq after that pass f, and
// whether the hub could answer: false when events after after may be
// missing from it (the reader is behind, or nothing was published yet),
// then the reader reads the outbox. last is the newest seq it holds.
func (h *Hub) Since(after int64, f model.EventFilter, limit int) (evs []model.Event, last int64, ok bool) {
	if h == nil {
		return nil, 0, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.floor < 0 || after < h.floor {
		return nil, 0, false
	}
	if len(h.buf) > 0 {
		last = h.buf[len(h.buf)-1].Seq
	}
	// binary search for the first event after after
	lo, hi := 0, len(h.buf)
	for lo < hi {
		m := (lo + hi) / 2
		if h.buf[m].Seq <= after {
			lo = m + 1
		} else {
			hi = m
		}
	}
	for _, e := range h.buf[lo:] {
		if len(evs) == limit {
			break
		}
		if f.Match(e) {
			evs = append(evs, e)
		}
	}
	return evs, last, true
}

// Wait returns a channel closed at the next Published (nil for a nil hub:
// it blocks forever, so callers also keep their poll timer).
func (h *Hub) Wait() <-chan struct{} {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.ch
}

// Last returns the newest seq the hub holds, and false when it holds
// nothing yet (nil hub, or nothing published since it started).
func (h *Hub) Last() (int64, bool) {
	if h == nil {
		return 0, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.floor < 0 {
		return 0, false
	}
	if len(h.buf) == 0 {
		return h.floor, true
	}
	return h.buf[len(h.buf)-1].Seq, true
}

// Mark tells a hub that has held nothing yet that nothing was published
// after seq (the outbox's newest when its poller started): from then on
// readers caught up to seq are answered from memory, also before the first
// publish.
func (h *Hub) Mark(seq int64) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.floor < 0 {
		h.floor = seq
	}
}
