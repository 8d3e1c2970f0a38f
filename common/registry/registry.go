// Package registry is where masters and workers announce themselves and find
// each other, and where masters elect the one that schedules. Standalone uses
// the in-process Memory registry; a cluster uses ZooKeeper (ZK, zk.go:
// ephemeral nodes under /beluga/nodes, the leader lock under
// /beluga/election).
package registry

import (
	"context"
	"errors"
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
	CPU      float64 `json:"cpu"`
	Memory   float64 `json:"memory"`
	Load     float64 `json:"load"`
	Running  int     `json:"running"`
	Capacity int     `json:"capacity"`
	// Overloaded: the worker's host is over the worker's own overload
	// thresholds (off by default); masters dispatch nothing to it.
	Overloaded     bool      `json:"overloaded,omitempty"`
	OverloadReason string    `json:"overload_reason,omitempty"`
	StartTime      time.Time `json:"start_time"`
	Time           time.Time `json:"time"`
}

// Node is one registered process.
type Node struct {
	Role   Role     `json:"role"`
	Addr   string   `json:"addr"`
	Groups []string `json:"groups,omitempty"`
	LogDir string   `json:"log_dir,omitempty"` // a worker's task log directory, on its host
	// TasksRunAsServer: a worker that is not root with task isolation on,
	// so its tasks run as its own OS user with no sandbox
	// (executor.Isolation.RunsAsServer). A master sends it no shell or
	// python task of a non-admin while tasks.allow_unsandboxed_code is 0
	// (docs/security.md, item 1).
	TasksRunAsServer bool      `json:"tasks_run_as_server,omitempty"`
	Heartbeat        Heartbeat `json:"heartbeat"`
}

// Registry lists live nodes and reports changes.
type Registry interface {
	// Register announces n until Deregister or the registry stops; ctx
	// bounds this call only. Re-registering the same role and address
	// replaces its heartbeat.
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

// ConnState is the registry's link to its coordination service.
type ConnState int

// Connection states, in the order a subscriber may see them.
const (
	// Connected: a new session is up and this process's registrations are
	// written (the first session, or a new one after Expired).
	Connected ConnState = iota + 1
	// Suspended: the connection is lost; the session may still be alive,
	// but nothing this process holds (leadership) can be proven.
	Suspended
	// Expired: the session is gone, and with it this process's ephemeral
	// nodes and leadership. A new session follows (Connected).
	Expired
	// Reconnected: the connection is back within the same session.
	Reconnected
)

func (s ConnState) String() string {
	switch s {
	case Connected:
		return "connected"
	case Suspended:
		return "suspended"
	case Expired:
		return "expired"
	case Reconnected:
		return "reconnected"
	}
	return "unknown"
}

// StateWatcher reports connection state changes.
type StateWatcher interface {
	// States returns a new subscription: the current state first (once
	// connected), then every change. cancel ends it.
	States() (ch <-chan ConnState, cancel func())
}

// Term is one leadership term.
type Term struct {
	// Epoch orders terms: a later term has a higher epoch, also across
	// leader changes, so writes stamped with an older epoch can be refused.
	Epoch int64
	// Lost closes when the term ends: resignation, or (ZooKeeper) as soon as
	// the connection is suspended or the session expires.
	Lost <-chan struct{}
}

// Elector elects one leader among the masters.
type Elector interface {
	// Campaign blocks until this process leads or ctx ends.
	Campaign(ctx context.Context, id string) (Term, error)
	// Resign gives up the current term (no-op if none); Lost is closed
	// when it returns.
	Resign()
	// Leader is the current leader's id as seen from here.
	Leader() (id string, ok bool)
}

// TermReader is implemented by electors that can say the current leader's
// epoch (ZK and Memory): workers obey only the leader of the current term.
type TermReader interface {
	// LeaderTerm is the current leader's id and the epoch of its term, as
	// seen from here; ok is false while there is none (or it is unknown).
	LeaderTerm() (id string, epoch int64, ok bool)
}

// Errors shared by the implementations.
var (
	// ErrStopped: the registry was stopped.
	ErrStopped = errors.New("registry: stopped")
	// ErrCampaignActive: this elector already campaigns or leads; Resign
	// or let the term end first.
	ErrCampaignActive = errors.New("registry: a campaign or term is already active on this elector")
)
