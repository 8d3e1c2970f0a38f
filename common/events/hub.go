// Package events holds what the event stream's producers and readers share
// in-process: the hub that wakes readers when the publisher numbered new
// events, and the webhook signature.
package events

import "sync"

// Hub wakes readers in this process when events were published. In a
// cluster the API process has no hub and polls the outbox instead. A nil
// *Hub is valid: it never wakes anyone.
type Hub struct {
	mu   sync.Mutex
	ch   chan struct{}
	last int64
}

// NewHub returns a hub with nothing published yet.
func NewHub() *Hub { return &Hub{ch: make(chan struct{})} }

// Published records that events up to seq last are readable and wakes
// every waiter.
func (h *Hub) Published(last int64) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if last > h.last {
		h.last = last
	}
	close(h.ch)
	h.ch = make(chan struct{})
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
