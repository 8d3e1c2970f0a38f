package master_test

import (
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/master"
)

// *store.Store is the master's store: its term view included (Store's type
// parameter is bound by TermStore, which holds every service's slice).
var _ master.Store[*store.Store] = (*store.Store)(nil)
