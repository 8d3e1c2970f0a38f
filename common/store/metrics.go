package store

import (
	"errors"
	"time"

	"github.com/beluga-scheduler/beluga/common/metrics"
)

// observeTx records a transaction's latency and, when it failed, why.
func observeTx(start time.Time, err *error) {
	metrics.DBTx.Observe(metrics.Since(start))
	switch {
	case *err == nil:
	case errors.Is(*err, ErrFenced):
		metrics.DBTxFenced.Inc()
	default:
		metrics.DBTxFailed.Inc()
	}
}
