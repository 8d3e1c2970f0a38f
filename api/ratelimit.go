package api

import (
	"context"
	"sync"
	"time"
)

// Login limits (README, "Login"). Guessing is slowed where it happens, and
// nobody can lock another person out:
//   - a (name, address) pair has loginFreeFails failures free, then waits
//     1 s, 2 s, 4 s ... up to loginMaxBackoff before its next try (429 with
//     Retry-After): only that address is held, so the right password from
//     another address still goes through at once;
//   - an address has loginFreeFailsAddr failures free (over any names),
//     then the same doubling: spraying names from one address is held;
//   - a name has loginNameSlowAfter failures (from every address) within
//     loginNameWindow, then each of its logins waits loginNameSlow before
//     the password is compared: it only slows, it never refuses;
//   - at most loginCompares bcrypt compares run at once; a login that finds
//     them all busy for loginCompareWait is 429, so many addresses cannot
//     turn the server's CPU into a guessing engine.
//
// A pair's or address's failures are forgotten loginForget after the last
// one, and a pair's on the right password.
const (
	loginFreeFails     = 5
	loginFreeFailsAddr = 20
	loginMaxBackoff    = 15 * time.Minute
	loginForget        = time.Hour
	loginNameSlowAfter = 20
	loginNameWindow    = 15 * time.Minute
	loginNameSlow      = time.Second
	loginCompares      = 4
	loginCompareWait   = 2 * time.Second
	loginKeysMax       = 10000 // beyond this, forgotten keys are dropped
)

// failures is a key's run of failed logins.
type failures struct {
	n    int
	last time.Time
}

// backoff decides whether a key with failures f may try at now: 0 when it
// may, else how long until it may. free failures cost nothing; each one
// after doubles the wait, from 1 s up to limit.
func backoff(f failures, free int, limit time.Duration, now time.Time) time.Duration {
	if f.n < free || now.Sub(f.last) >= loginForget {
		return 0
	}
	d := limit
	if shift := f.n - free; shift < 20 {
		d = min(time.Second<<shift, limit)
	}
	if end := f.last.Add(d); now.Before(end) {
		return end.Sub(now)
	}
	return 0
}

// nameSlow is how long a login for a name with failures f waits before
// its password is compared.
func nameSlow(f failures, now time.Time) time.Duration {
	if f.n < loginNameSlowAfter || now.Sub(f.last) >= loginNameWindow {
		return 0
	}
	return loginNameSlow
}

// loginLimiter counts failed logins. Its map is small and touched only
// by login requests, so a mutex guards it rather than an owning goroutine.
type loginLimiter struct {
	mu       sync.Mutex
	keys     map[string]failures
	now      func() time.Time
	compares chan struct{} // a slot per bcrypt compare running
	wait     time.Duration // how long a login waits for a slot
}

func newLoginLimiter() *loginLimiter {
	return &loginLimiter{keys: map[string]failures{}, now: time.Now,
		compares: make(chan struct{}, loginCompares), wait: loginCompareWait}
}

// Names are normalised (store.NormalUserName) before they get here.
func pairKey(name, addr string) string { return "p\x00" + name + "\x00" + addr }
func addrKey(addr string) string       { return "a\x00" + addr }
func nameKey(name string) string       { return "n\x00" + name }

// check returns how long the login of name from addr must wait before it
// may try (0: go on), and how long it is slowed once it does.
func (l *loginLimiter) check(name, addr string) (retry, slow time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	retry = max(backoff(l.keys[pairKey(name, addr)], loginFreeFails, loginMaxBackoff, now),
		backoff(l.keys[addrKey(addr)], loginFreeFailsAddr, loginMaxBackoff, now))
	return retry, nameSlow(l.keys[nameKey(name)], now)
}

// fail records a failed login.
func (l *loginLimiter) fail(name, addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if len(l.keys) > loginKeysMax {
		l.prune(now)
	}
	for _, k := range []string{pairKey(name, addr), addrKey(addr), nameKey(name)} {
		f := l.keys[k]
		forget := loginForget
		if k == nameKey(name) {
			forget = loginNameWindow
		}
		if now.Sub(f.last) >= forget {
			f = failures{}
		}
		f.n++
		f.last = now
		l.keys[k] = f
	}
}

// prune drops forgotten keys and, while there are still too many (one
// failure each from many addresses), those within their free failures:
// they hold nobody back yet, and a key that does is kept.
func (l *loginLimiter) prune(now time.Time) {
	for k, f := range l.keys {
		if now.Sub(f.last) >= loginForget {
			delete(l.keys, k)
		}
	}
	if len(l.keys) <= loginKeysMax {
		return
	}
	for k, f := range l.keys {
		free := loginFreeFails
		switch k[0] {
		case 'a':
			free = loginFreeFailsAddr
		case 'n':
			free = loginNameSlowAfter
		}
		if f.n < free {
			delete(l.keys, k)
		}
	}
}

// succeed forgets the pair's failures (not the address's: one good
// password must not reopen guessing at other names; not the name's: the
// guessing elsewhere goes on).
func (l *loginLimiter) succeed(name, addr string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.keys, pairKey(name, addr))
}

// compare runs f, a bcrypt compare, in one of the limited slots; false when
// no slot came free in time (or ctx ended) and f did not run.
func (l *loginLimiter) compare(ctx context.Context, f func()) bool {
	t := time.NewTimer(l.wait)
	defer t.Stop()
	select {
	case l.compares <- struct{}{}:
	case <-t.C:
		return false
	case <-ctx.Done():
		return false
	}
	defer func() { <-l.compares }()
	f()
	return true
}
