// Package registry is where masters and workers announce themselves and find
// each other. Standalone uses the in-process Memory registry; a cluster uses
// ZooKeeper (ephemeral nodes under /beluga/nodes).
package registry

import (
	"context"
	"time"
)

// Role of a registered node.
type Role string

// Roles.
const (
	RoleMaster Role = "master"
	RoleWorker Role = "worker"
)

// Heartbeat is the load a node reports, refreshed every few seconds.
type Heartbeat struct {
	CPU       float64   `json:"cpu"`
	Memory    float64   `json:"memory"`
	Load      float64   `json:"load"`
	Running   int       `json:"running"`
	Capacity  int       `json:"capacity"`
	StartTime time.Time `json:"start_time"`
	Time      time.Time `json:"time"`
}

// Node is one registered process.
type Node struct {
	Role      Role      `json:"role"`
	Addr      string    `json:"addr"`
	Groups    []string  `json:"groups,omitempty"`
	Heartbeat Heartbeat `json:"heartbeat"`
}

// Registry lists live nodes and reports changes.
type Registry interface {
	// Register announces n until ctx ends or Deregister; re-registering the
	// same role and address replaces its heartbeat.
	Register(ctx context.Context, n Node) error
	Deregister(ctx context.Context, role Role, addr string) error
	// Nodes returns the live nodes of a role.
	Nodes(role Role) []Node
	// Changes returns a channel that receives a value (coalesced) after any
	// join, leave or heartbeat. Each call returns a new subscription; cancel
	// ends it.
	Changes() (ch <-chan struct{}, cancel func())
}

// InGroup reports whether n serves group.
func (n Node) InGroup(group string) bool {
	for _, g := range n.Groups {
		if g == group {
			return true
		}
	}
	return false
}
