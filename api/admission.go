package api

import (
	"context"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/store"
)

// The leader's admission as the API tells it (docs/architecture.md,
// Admission): a run asked for while the leader is held is stored and
// answered 201 with the reason it waits (never 429: the run is kept and
// runs in its turn, and a client told to retry a POST that stored nothing
// would move the queue into every client); /healthz says the master is
// saturated.

// admissionTTL is how long a read of the admission state serves, so that
// a flood of runs asked for does not read it once each.
const admissionTTL = time.Second

// admissionStore reads the leader's recorded admission state.
type admissionStore interface {
	AdmissionCurrent(ctx context.Context) (store.Admission, error)
}

// admissionCache serves the admission state from one read per admissionTTL.
type admissionCache struct {
	store admissionStore
	log   *zap.Logger

	mu  sync.Mutex
	at  time.Time
	cur store.Admission
}

// get is the leader's admission state; a failed read keeps the last one
// (logged): it only words answers, it refuses nothing.
func (c *admissionCache) get(ctx context.Context) store.Admission {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.at.IsZero() || time.Since(c.at) > admissionTTL {
		c.at = time.Now()
		a, err := c.store.AdmissionCurrent(context.WithoutCancel(ctx))
		if err != nil {
			c.log.Warn("read the leader's admission state failed; keeping the last one", zap.Error(err))
		} else {
			c.cur = a
		}
	}
	return c.cur
}

// Admission is the leader's admission in GET /healthz.
type Admission struct {
	// Saturated: the leading master claims no new runs; they wait in the
	// database, submitted, with Reason naming the limit (a setting).
	Saturated bool   `json:"saturated"`
	Reason    string `json:"reason,omitempty"`
	Since     *Time  `json:"since,omitempty"`
}

func fromAdmission(a store.Admission) *Admission {
	out := &Admission{Saturated: a.Reason != "", Reason: a.Reason}
	if a.Since != nil {
		out.Since = optTime(*a.Since)
	}
	return out
}
