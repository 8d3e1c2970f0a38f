package api

import (
	"fmt"
	"strings"
	"testing"
)

// A wait names at most upstreamNamed upstreams and counts them all: the
// pending join of a big fan-out must not carry every name.
func TestUpstreamWaitNamesTheFirstAndCountsAll(t *testing.T) {
	for _, n := range []int{1, upstreamNamed, upstreamNamed + 1, 90000} {
		ups := make([]string, n)
		for i := range ups {
			ups[i] = fmt.Sprintf("p%06d", n-1-i) // reverse order: the wait sorts
		}
		w := upstreamWait(ups)
		named := min(n, upstreamNamed)
		if len(w.Upstream) != named || w.UpstreamTotal != n || w.Upstream[0] != "p000000" {
			t.Fatalf("%d upstreams: named %d (first %q), total %d; want %d named from p000000, total %d",
				n, len(w.Upstream), w.Upstream[0], w.UpstreamTotal, named, n)
		}
		more := fmt.Sprintf(" and %d more", n-named)
		if strings.HasSuffix(w.Reason, more) != (n > named) || strings.Count(w.Reason, ",") != named-1 {
			t.Fatalf("%d upstreams: reason %.120q", n, w.Reason)
		}
	}
}
