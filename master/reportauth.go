package master

import (
	"fmt"

	"github.com/beluga-scheduler/beluga/remote"
	"github.com/beluga-scheduler/beluga/remote/message"
)

// reportRefusal says why a worker report must be dropped ("" to take it).
// A report names the worker it comes from (Host); the store then accepts it
// only for the attempt the DB says that worker owns (store.ApplyReports,
// Foreign). So the name must be the worker's authenticated identity: a
// member cannot report on another worker's tasks.
func (m *Master) reportRefusal(p remote.Peer, msg message.Message) string {
	if m.cfg.Secret.Empty() {
		return ""
	}
	peer, ok := remote.PeerIdentity(p)
	return reportFrom(peer, ok, reportHost(msg))
}

// reportFrom is the decision, pure for tests.
func reportFrom(peer remote.Identity, authed bool, host string) string {
	switch {
	case !authed:
		return "connection is not authenticated"
	case peer.Role != remote.RoleWorker:
		return fmt.Sprintf("sender is %s, not a worker", peer)
	case host != peer.ID:
		return fmt.Sprintf("report names worker %q but comes from %s", host, peer)
	}
	return ""
}

func reportHost(msg message.Message) string {
	switch v := msg.(type) {
	case message.Ack:
		return v.Host
	case message.Running:
		return v.Host
	case message.Result:
		return v.Host
	}
	return ""
}
