package freeport

import (
	"net"
	"strconv"
	"testing"
)

// TestTakeBelowEphemeral: the ports are distinct, bindable once released,
// and below the ephemeral range when it leaves room (the kernel's own
// port-0 picks and outgoing connections never land there).
func TestTakeBelowEphemeral(t *testing.T) {
	ports, err := Take(20)
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := pickRange()
	seen := map[int]bool{}
	for _, p := range ports {
		if seen[p] {
			t.Fatalf("port %d handed out twice in %v", p, ports)
		}
		seen[p] = true
		if hi > lo && (p < lo || p >= hi) {
			t.Fatalf("port %d outside [%d, %d)", p, lo, hi)
		}
		l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
		if err != nil {
			t.Fatalf("port %d not free after Take: %v", p, err)
		}
		l.Close()
	}
}
