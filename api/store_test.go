package api_test

import (
	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/common/store"
)

// *store.Store is the API's store, and the narrow ones built apart from the
// server.
var (
	_ api.Store          = (*store.Store)(nil)
	_ api.BootstrapStore = (*store.Store)(nil)
	_ api.ClusterStore   = (*store.Store)(nil)
)
