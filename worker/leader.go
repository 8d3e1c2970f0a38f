package worker

import (
	"fmt"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/remote"
	"github.com/beluga-scheduler/beluga/remote/message"
)

// leaderWait bounds how long a command from a master that is not (yet) the
// leader in this worker's registry view waits for the view: a new leader
// may dispatch before the worker's registry watch has seen it win.
const leaderWait = 3 * time.Second

// leaderView is the leader as the registry names it: its id (RPC address)
// and its term's epoch. Presence sets it; handlers read it. The epoch a
// worker accepts comes from here, never from a frame.
type leaderView struct {
	mu      sync.Mutex
	id      string
	epoch   int64
	changed chan struct{} // closed and replaced on every set
}

func (l *leaderView) init() { l.changed = make(chan struct{}) }

func (l *leaderView) set(id string, epoch int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.id == id && l.epoch == epoch {
		return
	}
	l.id, l.epoch = id, epoch
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *leaderView) get() (string, int64, <-chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.id, l.epoch, l.changed
}

// SetLeader records the registry's leader and its epoch (Presence calls it
// on every change it sees).
func (w *Worker) SetLeader(id string, epoch int64) { w.leader.set(id, epoch) }

// commandFrom decides whether a command may be obeyed: who sent it (the
// authenticated peer), what the registry says (leader id and epoch), and
// what the command claims (epoch and master address; 0 and "" when it
// carries none). A pure function; "" means obey.
func commandFrom(peer remote.Identity, authed bool, leaderID string, leaderEpoch int64, claimEpoch int64, claimAddr string) string {
	switch {
	case !authed:
		return "connection is not authenticated"
	case peer.Role != remote.RoleMaster:
		return fmt.Sprintf("sender is %s, not a master", peer)
	case leaderID == "":
		return "no leader is known from the registry"
	case peer.ID != leaderID:
		return fmt.Sprintf("sender %s is not the leader the registry names (%s)", peer, leaderID)
	case claimAddr != "" && claimAddr != peer.ID:
		return fmt.Sprintf("master_addr %s is not the sender %s", claimAddr, peer.ID)
	case claimEpoch != 0 && claimEpoch != leaderEpoch:
		return fmt.Sprintf("epoch %d is not the leader's epoch in the registry (%d)", claimEpoch, leaderEpoch)
	}
	return ""
}

// authorize says why a command from p must not be obeyed ("" to obey).
// Without auth (package tests) everything is obeyed, as before. A command
// that fails only because the registry view may lag behind a new leader
// waits for the view, up to leaderWait.
func (w *Worker) authorize(p remote.Peer, m message.Message) string {
	if w.cfg.Secret.Empty() {
		return ""
	}
	var epoch int64
	var addr string
	switch m := m.(type) {
	case message.Dispatch:
		epoch, addr = m.Epoch, m.MasterAddr
		if epoch == 0 {
			return "dispatch carries no epoch"
		}
	case message.Query:
		epoch, addr = m.Epoch, m.MasterAddr
		if epoch == 0 {
			return "query carries no epoch"
		}
	}
	peer, authed := remote.PeerIdentity(p)
	var deadline *time.Timer // only when the view lags: not a timer per command
	for {
		id, ep, changed := w.leader.get()
		why := commandFrom(peer, authed, id, ep, epoch, addr)
		if why == "" {
			return ""
		}
		// Only a claim newer than the view can be the view lagging.
		lagging := authed && peer.Role == remote.RoleMaster && (id != peer.ID || epoch > ep)
		if !lagging {
			return why
		}
		if deadline == nil {
			deadline = time.NewTimer(leaderWait)
			defer deadline.Stop()
		}
		select {
		case <-changed:
		case <-deadline.C:
			return why
		}
	}
}

// refused logs a command not obeyed. Only authenticated members get this
// far, so it needs no rate limit.
func (w *Worker) refused(p remote.Peer, m message.Message, why string) {
	peer, _ := remote.PeerIdentity(p)
	w.log.Warn("command refused: only the leader the registry names may command this worker",
		zap.String("remote", p.RemoteAddr()), zap.Stringer("peer", peer),
		zap.String("command", fmt.Sprintf("%T", m)), zap.String("why", why))
}
