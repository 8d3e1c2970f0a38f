package master

import (
	"testing"

	"github.com/beluga-scheduler/beluga/common/model"
)

func TestRetriesLeft(t *testing.T) {
	for _, c := range []struct {
		attempt, base, retries int
		want                   bool
	}{
		{1, 1, 0, false},
		{1, 1, 1, true},
		{2, 1, 1, false},
		{1, 0, 1, true},  // a row from before retry_base: the budget began at 1
		{3, 3, 1, true},  // the first attempt of a recovery retries...
		{4, 3, 1, false}, // ...once
		{4, 3, 2, true},
		{5, 3, 2, false},
	} {
		got := retriesLeft(&model.TaskInstance{Attempt: c.attempt, RetryBase: c.base}, c.retries)
		if got != c.want {
			t.Errorf("attempt %d, budget from %d, retries %d: got %v, want %v", c.attempt, c.base, c.retries, got, c.want)
		}
	}
}
