package master

import (
	"fmt"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/remote"
	"github.com/beluga-scheduler/beluga/remote/message"
)

// reportRefusal says why a worker report must be dropped ("" to take it).
// A report names the worker it comes from (Host); the store then accepts it
// only for the attempt the DB says that worker owns (store.TaskApplyReports,
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

// logResult names the sender of a result (issue 22, item 6): the worker's
// authenticated identity and its address, with the task's fields (task). A task that did not succeed is
// logged at info, the many that did at debug.
func logResult(log *zap.Logger, p remote.Peer, r message.Result, task zap.Field) {
	peer, _ := remote.PeerIdentity(p)
	lvl := zap.DebugLevel
	if r.State != "succeeded" {
		lvl = zap.InfoLevel
	}
	log.Log(lvl, "task result", task, zap.String("state", r.State),
		zap.Stringer("from", peer), zap.String("remote", p.RemoteAddr()))
}
