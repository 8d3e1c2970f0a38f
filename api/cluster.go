package api

import (
	"context"
	"fmt"
	"time"

	"github.com/beluga-scheduler/beluga/common/registry"
)

// ClusterMaster is one master in GET /api/v1/cluster.
type ClusterMaster struct {
	Address string `json:"address"`
	Role    string `json:"role"` // active or standby
	Epoch   int64  `json:"epoch,omitempty"`
	Since   *Time  `json:"since,omitempty"` // active: term start; standby: process start
}

// ClusterWorker is one worker in GET /api/v1/cluster.
type ClusterWorker struct {
	Address  string   `json:"address"`
	Groups   []string `json:"groups"`
	Running  int      `json:"running"`
	Capacity int      `json:"capacity"`
	CPU      float64  `json:"cpu"`
	Memory   float64  `json:"memory"`
	Load     float64  `json:"load"`
	// Overloaded: over the worker's own thresholds; it gets no tasks.
	Overloaded     bool   `json:"overloaded"`
	OverloadReason string `json:"overload_reason,omitempty"`
	StartTime      *Time  `json:"start_time,omitempty"`
	LastHeartbeat  *Time  `json:"last_heartbeat,omitempty"`
	// FreeSlots are its slots not running a task; InFlight the tasks the
	// DB has dispatched to it or running there.
	FreeSlots int `json:"free_slots"`
	InFlight  int `json:"in_flight"`
	// Skipped: the leader's worker selection passes it over now, and why
	// (overloaded, or full: 2 x its slots in flight).
	Skipped    bool   `json:"skipped"`
	SkipReason string `json:"skip_reason,omitempty"`
}

// Cluster is the body of GET /api/v1/cluster.
type Cluster struct {
	Leader  string          `json:"leader,omitempty"`
	Masters []ClusterMaster `json:"masters"`
	Workers []ClusterWorker `json:"workers"`
}

// ClusterView builds the cluster view from the registry, the election and
// the recorded leader term.
func ClusterView(st ClusterStore, reg registry.Registry, el registry.Elector) func(context.Context) (any, error) {
	return func(ctx context.Context) (any, error) {
		term, err := st.TermCurrentInfo(ctx)
		if err != nil {
			return nil, err
		}
		leader, _ := el.Leader()
		c := Cluster{Leader: leader, Masters: []ClusterMaster{}, Workers: []ClusterWorker{}}
		for _, n := range reg.Nodes(registry.RoleMaster) {
			m := ClusterMaster{Address: n.Addr, Role: "standby", Since: optTime(n.Heartbeat.StartTime)}
			if n.Addr == leader {
				m.Role = "active"
				if term.Host == n.Addr {
					m.Epoch = term.Epoch
					if term.StartedAt != nil {
						m.Since = optTime(*term.StartedAt)
					}
				}
			}
			c.Masters = append(c.Masters, m)
		}
		held, err := st.TaskInFlight(ctx)
		if err != nil {
			return nil, err
		}
		inFlight := map[string]int{}
		for _, t := range held {
			inFlight[t.Host]++
		}
		for _, n := range reg.Nodes(registry.RoleWorker) {
			hb := n.Heartbeat
			w := ClusterWorker{Address: n.Addr, Groups: n.Groups, Running: hb.Running,
				Capacity: hb.Capacity, CPU: hb.CPU, Memory: hb.Memory, Load: hb.Load,
				Overloaded: hb.Overloaded, OverloadReason: hb.OverloadReason,
				StartTime: optTime(hb.StartTime), LastHeartbeat: optTime(hb.Time),
				FreeSlots: max(hb.Capacity-hb.Running, 0), InFlight: inFlight[n.Addr]}
			w.Skipped, w.SkipReason = skipped(hb.Overloaded, hb.OverloadReason, hb.Capacity, w.InFlight)
			c.Workers = append(c.Workers, w)
		}
		return c, nil
	}
}

func optTime(t time.Time) *Time {
	if t.IsZero() {
		return nil
	}
	v := timeOf(t)
	return &v
}

// skipped says whether the leader's worker selection passes a worker over
// and why, from what the API sees: its heartbeat's overload flag, and the
// tasks in flight there against the leader's limit of 2 x its slots
// (master/dispatcher.go, queueFactor). A blacklist after a failed send and
// unanswered dispatches are the leader's alone: they show on the waiting
// instances' reasons.
func skipped(overloaded bool, why string, slots, inFlight int) (bool, string) {
	switch {
	case overloaded:
		if why == "" {
			return true, "overloaded"
		}
		return true, "overloaded: " + why
	case slots > 0 && inFlight >= 2*slots:
		return true, fmt.Sprintf("full: %d tasks in flight for %d slots (at most 2 x slots)", inFlight, slots)
	}
	return false, ""
}
