package api

import (
	"sync"
)

// byteBudget admits work by its size in bytes while the total in flight
// stays within a limit read at each admission (a setting an admin may
// change at any time, which golang.org/x/sync/semaphore's fixed size does
// not allow). One piece is always admitted when nothing else is in flight,
// so a limit below the largest body refuses nothing on an idle server.
type byteBudget struct {
	mu       sync.Mutex
	inFlight int64
}

// take admits n bytes under limit; false: over it, nothing taken.
func (b *byteBudget) take(n, limit int64) (inFlight int64, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.inFlight > 0 && b.inFlight+n > limit {
		return b.inFlight, false
	}
	b.inFlight += n
	return b.inFlight, true
}

func (b *byteBudget) give(n int64) {
	b.mu.Lock()
	b.inFlight -= n
	b.mu.Unlock()
}

// userSlots counts what each user holds in flight (log reads), each user
// up to a limit read at each admission.
type userSlots struct {
	mu   sync.Mutex
	held map[int64]int64
}

// take admits one more for user under limit; false: the user holds limit.
func (s *userSlots) take(user, limit int64) (held int64, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held == nil {
		s.held = map[int64]int64{}
	}
	if s.held[user] >= limit {
		return s.held[user], false
	}
	s.held[user]++
	return s.held[user], true
}

func (s *userSlots) give(user int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[user]--; s.held[user] <= 0 {
		delete(s.held, user)
	}
}
