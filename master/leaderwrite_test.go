package master

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/store"
)

func TestLeaderWrite(t *testing.T) {
	t.Parallel()
	refused := fmt.Errorf("insert attempts: %w", store.ErrFenced)
	down := errors.New("connection refused")
	for _, tc := range []struct {
		name   string
		errs   []error // op's results, in order; nil after the last
		cancel bool    // ctx already ended
		want   writeResult
		calls  int
	}{
		{name: "first try", want: written, calls: 1},
		{name: "after failures", errs: []error{down, down}, want: written, calls: 3},
		{name: "fenced is done", errs: []error{refused}, want: fencedOut, calls: 1},
		{name: "fenced after a failure", errs: []error{down, refused}, want: fencedOut, calls: 2},
		{name: "context ended", errs: []error{down}, cancel: true, want: abandoned, calls: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancel {
				cancel()
			}
			calls := 0
			got := leaderWrite(ctx, zap.NewNop(), "test write", func() error {
				calls++
				if calls <= len(tc.errs) {
					return tc.errs[calls-1]
				}
				return nil
			})
			if got != tc.want || calls != tc.calls {
				t.Fatalf("result %v after %d calls; want %v, %d", got, calls, tc.want, tc.calls)
			}
		})
	}
}
