package master

import (
	"slices"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
)

func TestGoneHolders(t *testing.T) {
	t.Parallel()
	live := map[string]time.Time{"w1": time.Unix(1, 0), "w2": time.Unix(2, 0)}
	held := func(hosts ...string) []model.TaskInstance {
		out := make([]model.TaskInstance, len(hosts))
		for i, h := range hosts {
			out[i] = model.TaskInstance{ID: int64(i + 1), Host: h}
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		inFlight []model.TaskInstance
		want     []string
	}{
		{"nothing in flight", nil, nil},
		{"every holder live", held("w1", "w2", "w1"), nil},
		{"a holder gone, named once", held("w3", "w1", "w3"), []string{"w3"}},
		{"several gone, sorted", held("w9", "w2", "w4"), []string{"w4", "w9"}},
		{"no host recorded", held(""), nil},
	} {
		if got := goneHolders(tc.inFlight, live); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
