package api

import (
	"sync"
	"time"
)

// Login rate limits: failed logins per user name and per address within a
// window. Past the limit, logins for that name or from that address are
// refused (429 with Retry-After) until the window of the first failure ends.
const (
	loginWindow       = 5 * time.Minute
	loginFailsPerUser = 5
	loginFailsPerAddr = 20
	loginKeysMax      = 10000 // beyond this, expired windows are dropped
)

type failWindow struct {
	start time.Time
	fails int
}

// retryAfter decides whether a key with window w may try at now: 0 when it
// may, else how long until it may.
func retryAfter(w failWindow, max int, window time.Duration, now time.Time) time.Duration {
	if w.fails < max {
		return 0
	}
	end := w.start.Add(window)
	if !now.Before(end) {
		return 0
	}
	return end.Sub(now)
}

// loginLimiter counts failed logins. Its map is small and touched only
// by login requests, so a mutex guards it rather than an owning goroutine.
type loginLimiter struct {
	mu   sync.Mutex
	keys map[string]failWindow
	now  func() time.Time
}

func newLoginLimiter() *loginLimiter {
	return &loginLimiter{keys: map[string]failWindow{}, now: time.Now}
}

func userKey(name string) string { return "u\x00" + name }
func addrKey(addr string) string { return "a\x00" + addr }

// check returns how long the login of user from addr must wait (0: go on).
func (l *loginLimiter) check(user, addr string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	return max(retryAfter(l.keys[userKey(user)], loginFailsPerUser, loginWindow, now),
		retryAfter(l.keys[addrKey(addr)], loginFailsPerAddr, loginWindow, now))
}

// fail records a failed login.
func (l *loginLimiter) fail(user, addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if len(l.keys) > loginKeysMax {
		for k, w := range l.keys {
			if !now.Before(w.start.Add(loginWindow)) {
				delete(l.keys, k)
			}
		}
	}
	for _, k := range []string{userKey(user), addrKey(addr)} {
		w := l.keys[k]
		if w.fails == 0 || !now.Before(w.start.Add(loginWindow)) {
			w = failWindow{start: now}
		}
		w.fails++
		l.keys[k] = w
	}
}

// succeed forgets the user's failures (not the address's: one good
// password must not reopen guessing at others).
func (l *loginLimiter) succeed(user string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.keys, userKey(user))
}
