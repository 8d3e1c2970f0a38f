package master

import "sync"

// mailbox is an unbounded queue with a wake-up signal. Senders never block,
// so the event service and the dispatcher never stall on a busy runner; the
// owning goroutine waits on Ready() and then takes everything with Drain().
type mailbox[T any] struct {
	mu    sync.Mutex
	items []T
	ready chan struct{}
}

func newMailbox[T any]() *mailbox[T] { return &mailbox[T]{ready: make(chan struct{}, 1)} }

func (m *mailbox[T]) Put(items ...T) {
	m.mu.Lock()
	m.items = append(m.items, items...)
	m.mu.Unlock()
	select {
	case m.ready <- struct{}{}:
	default:
	}
}

// Ready receives a value after Put; check Drain for the items.
func (m *mailbox[T]) Ready() <-chan struct{} { return m.ready }

// Drain takes every queued item.
func (m *mailbox[T]) Drain() []T {
	m.mu.Lock()
	out := m.items
	m.items = nil
	m.mu.Unlock()
	return out
}
