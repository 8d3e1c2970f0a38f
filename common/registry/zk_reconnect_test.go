package registry

import (
	"testing"
	"time"
)

func TestRedialWait(t *testing.T) {
	for _, tc := range []struct {
		n         int64
		sincePrev time.Duration
		want      time.Duration
	}{
		{1, 0, 0},             // the first dial after a loss goes at once
		{2, 0, redialMin},     // then back off
		{3, 0, 2 * redialMin}, //
		{4, 0, 4 * redialMin}, // 200 ms, below the cap
		{5, 0, redialMax},
		{9, 0, redialMax},  // capped
		{60, 0, redialMax}, // no overflow
		{3, 30 * time.Millisecond, 70 * time.Millisecond}, // less what the attempt before took
		{4, time.Second, 0}, // a handshake cut at its limit waited already
	} {
		if got := redialWait(tc.n, tc.sincePrev); got != tc.want {
			t.Errorf("redialWait(%d, %v) = %v, want %v", tc.n, tc.sincePrev, got, tc.want)
		}
	}
}

func TestHandshakeLimit(t *testing.T) {
	for _, tc := range []struct{ session, want time.Duration }{
		{4 * time.Second, 500 * time.Millisecond},
		{10 * time.Second, 1250 * time.Millisecond},
		{time.Second, minHandshake},
	} {
		if got := handshakeLimit(tc.session); got != tc.want {
			t.Errorf("handshakeLimit(%v) = %v, want %v", tc.session, got, tc.want)
		}
	}
}
