package store

import "time"

// PlanPinned is retention's pin hook at now, for the plan tests.
func (s *Store) PlanPinned(ids []int64, now time.Time) (map[int64]bool, error) {
	return planPinned(s.db, ids, now)
}
