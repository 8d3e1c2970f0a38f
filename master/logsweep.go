package master

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/remote"
	"github.com/beluga-scheduler/beluga/remote/message"
)

// Workers delete the task logs of purged runs themselves (worker/logsweep.go):
// each asks a master, now and then, which of the runs it holds log
// directories of are gone from the database. Any master answers, leader or
// standby: the answer is the database's.

// logGoneTimeout bounds one answer's reads.
const logGoneTimeout = 30 * time.Second

// logGoneSlots is how many LogGone answers read the database at once; a
// question beyond them is answered "unavailable" and asked again at the
// worker's next sweep.
const logGoneSlots = 2

// answerLogGone answers a worker's LogGone off the connection's goroutine,
// which must not wait on the database.
func (m *Master) answerLogGone(p remote.Peer, reqID uint64, q message.LogGone) {
	if reqID == 0 {
		return // a question sent as a push has nowhere to go
	}
	if why := m.logGoneRefusal(p); why != "" {
		m.log.Warn("log sweep question refused", zap.String("remote", p.RemoteAddr()), zap.String("why", why))
		_ = p.Send(reqID, message.Error{Code: "forbidden", Message: why})
		return
	}
	if err := message.CheckRunIDs(q.InstanceIDs); err != nil {
		_ = p.Send(reqID, message.Error{Code: "bad_request", Message: "log sweep: " + err.Error()})
		return
	}
	select {
	case m.logGone <- struct{}{}:
	default:
		_ = p.Send(reqID, message.Error{Code: "unavailable", Message: "log sweep: the master is answering other workers; ask again later"})
		return
	}
	go func() {
		defer func() { <-m.logGone }()
		ctx, cancel := context.WithTimeout(context.Background(), logGoneTimeout)
		defer cancel()
		gone, err := m.store.InstancesMissing(ctx, q.InstanceIDs)
		var reply message.Message = message.LogGoneReply{Gone: gone}
		if err != nil {
			m.log.Warn("log sweep: read which runs exist", zap.String("remote", p.RemoteAddr()), zap.Error(err))
			reply = message.Error{Code: "unavailable", Message: "log sweep: " + err.Error()}
		}
		if err := p.Send(reqID, reply); err != nil {
			m.log.Debug("log sweep reply not sent", zap.String("remote", p.RemoteAddr()), zap.Error(err))
		}
	}()
}

// logGoneRefusal says why a LogGone is not answered ("": answer it): with
// a cluster secret, only an authenticated worker asks.
func (m *Master) logGoneRefusal(p remote.Peer) string {
	if m.cfg.Secret.Empty() {
		return ""
	}
	peer, ok := remote.PeerIdentity(p)
	switch {
	case !ok:
		return "connection is not authenticated"
	case peer.Role != remote.RoleWorker:
		return "sender is " + peer.String() + ", not a worker"
	}
	return ""
}
