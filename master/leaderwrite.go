package master

import (
	"context"
	"errors"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/store"
)

// writeResult is how a leader write ended.
type writeResult uint8

const (
	written   writeResult = iota + 1 // the write went through
	fencedOut                        // refused for a newer term: done, the term is over
	abandoned                        // the context ended first
)

func (r writeResult) String() string {
	switch r {
	case written:
		return "written"
	case fencedOut:
		return "fenced out"
	case abandoned:
		return "abandoned"
	}
	return "unknown"
}

// leaderWrite runs a store write of the leader: retried with back-off (see
// retry) until it succeeds or ctx ends; a write refused for a newer term
// (store.ErrFenced) is not retried: the result says fencedOut, which
// callers treat as done, acting no more. The term hears of the fence from
// its store view (store.OnFenced), not from here.
func leaderWrite(ctx context.Context, log *zap.Logger, what string, op func() error) writeResult {
	refused := false
	ok := retry(ctx, log, what, func() error {
		err := op()
		if errors.Is(err, store.ErrFenced) {
			refused = true
			return nil
		}
		return err
	})
	switch {
	case refused:
		return fencedOut
	case ok:
		return written
	}
	return abandoned
}
