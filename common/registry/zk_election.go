package registry

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"
)

// Leader election on ZooKeeper, the lock recipe: every candidate creates an
// ephemeral sequential znode under <root>/election; the lowest sequence
// leads; every other candidate watches only its predecessor, so a leader
// change wakes one process, not all. The epoch of a term is its znode's
// sequence number plus one (so that 0 never names a term): ZooKeeper
// numbers the children of a parent from one counter that never goes back,
// so a later leader always has a higher epoch (as long as <root>/election
// itself is never deleted).
//
// Split brain: a term ends (Lost closes) as soon as the connection is
// suspended, not only when the session expires. A suspended leader whose
// session survives could keep its lock on reconnect, but while suspended it
// cannot prove it still leads, and the others may already have seen its
// session expire and elected a new leader. So it steps down at once and,
// once reconnected, deletes its old node and campaigns again with a new,
// higher epoch; leadership usually moves to a standby then. The client
// notices the silence after 2/3 of the session timeout, before the server
// expires the session after the whole of it, so the old leader stops
// before a new one can be elected; epoch checks on writes cover a process
// that was frozen past that (GC pause, SIGSTOP).

// electState is this process's part in the election; under ZK.mu.
type electState struct {
	active bool    // a Campaign runs or a term is held
	token  string  // campaign token of the active candidate node
	term   *zkTerm // the held term
	scrub  bool    // nodes of ours may be left in the election directory
}

type zkTerm struct {
	path       string
	gen        uint64 // session the node belongs to
	epoch      int64
	lost       chan struct{}
	resign     chan struct{}
	resignOnce sync.Once
	done       chan struct{} // the term's watcher has exited
}

// electionData is the content of a candidate node. The campaign token tells
// this process's candidate from nodes it left behind.
type electionData struct {
	ID       string `json:"id"`
	Campaign string `json:"campaign"`
}

// Campaign implements Elector: it blocks until this process leads or ctx
// ends. One campaign or term at a time per ZK (ErrCampaignActive). A node
// left by an earlier session with the same id (this process before a
// restart) is removed rather than waited for.
func (z *ZK) Campaign(ctx context.Context, id string) (Term, error) {
	if id == "" {
		return Term{}, errors.New("registry: campaign: empty id")
	}
	token := newToken()
	z.mu.Lock()
	if z.stopState {
		z.mu.Unlock()
		return Term{}, ErrStopped
	}
	if z.elect.active {
		z.mu.Unlock()
		return Term{}, ErrCampaignActive
	}
	z.elect.active, z.elect.token = true, token
	z.mu.Unlock()

	t, err := z.campaign(ctx, id, token)
	if err != nil {
		z.mu.Lock()
		z.elect.active, z.elect.token, z.elect.scrub = false, "", true
		z.mu.Unlock()
		z.kickLoop() // our candidate node may be left: the loop removes it
	}
	return t, err
}

func (z *ZK) campaign(ctx context.Context, id, token string) (Term, error) {
	data, err := json.Marshal(electionData{ID: id, Campaign: token})
	if err != nil {
		return Term{}, err
	}
	dir := z.paths.election
	var mine string // our candidate node, in session mineGen
	var mineGen uint64
	for {
		cur, changed := z.session()
		giveUp := func() {
			if mine != "" && mineGen == cur.gen && cur.conn != nil {
				_ = cur.conn.Delete(mine, -1) // best effort; the loop cleans up otherwise
			}
		}
		if err := ctx.Err(); err != nil {
			giveUp()
			return Term{}, err
		}
		// waitFor is how every step that cannot go on waits: for ev (nil:
		// never) or for the session to change (disconnect, reconnect, new
		// session).
		waitFor := func(ev <-chan zk.Event) error {
			select {
			case <-ev:
				return nil
			case <-changed:
				return nil
			case <-ctx.Done():
				giveUp()
				return ctx.Err()
			case <-z.stopping:
				return ErrStopped
			}
		}
		if !cur.ready {
			if err := waitFor(nil); err != nil {
				return Term{}, err
			}
			continue
		}
		if mine != "" && mineGen != cur.gen {
			mine = "" // went with the old session
		}
		if mine == "" {
			adopted, err := z.clearOwn(cur, id, token)
			if err == nil && adopted == "" {
				adopted, err = cur.conn.Create(dir+"/n_", data, zk.FlagEphemeralSequential, z.acl())
			}
			if errors.Is(err, zk.ErrNoNode) { // someone deleted the election directory
				if err = ensurePath(cur.conn, dir, z.aclFor); err == nil {
					continue
				}
			}
			if err != nil {
				if !isConnErr(err) {
					return Term{}, fmt.Errorf("registry: campaign: %w", err)
				}
				// The create may have happened without us hearing: the
				// next round adopts the node by its token.
				if err := waitFor(nil); err != nil {
					return Term{}, err
				}
				continue
			}
			mine, mineGen = adopted, cur.gen
		}
		names, _, err := cur.conn.Children(dir)
		if err != nil {
			if !isConnErr(err) {
				return Term{}, fmt.Errorf("registry: campaign: list %s: %w", dir, err)
			}
			if err := waitFor(nil); err != nil {
				return Term{}, err
			}
			continue
		}
		sorted := sortBySeq(names)
		idx := indexOf(sorted, mine[len(dir)+1:])
		switch {
		case idx < 0:
			z.log.Warn("our election node was deleted by someone; campaigning again", zap.String("path", mine))
			mine = ""
			continue
		case idx == 0:
			t, ok, err := z.lead(cur, mine, id)
			switch {
			case ok:
				return t, nil
			case isConnErr(err):
				if err := waitFor(nil); err != nil {
					return Term{}, err
				}
			case err != nil:
				return Term{}, fmt.Errorf("registry: campaign: watch %s: %w", mine, err)
			}
			continue // our node vanished or the session changed: look again
		}
		pred := dir + "/" + sorted[idx-1]
		exists, _, ev, err := cur.conn.ExistsW(pred)
		if err != nil {
			if !isConnErr(err) {
				return Term{}, fmt.Errorf("registry: campaign: watch %s: %w", pred, err)
			}
			if err := waitFor(nil); err != nil {
				return Term{}, err
			}
			continue
		}
		if !exists {
			continue
		}
		if err := waitFor(ev); err != nil { // predecessor gone, or the session changed: look again
			return Term{}, err
		}
	}
}

// lead turns the lowest candidate node into a term, if the session that
// created it is still the current one.
func (z *ZK) lead(cur sessionInfo, mine, id string) (Term, bool, error) {
	exists, _, ev, err := cur.conn.ExistsW(mine)
	if err != nil || !exists {
		return Term{}, false, err
	}
	t := &zkTerm{path: mine, gen: cur.gen, epoch: seqOf(mine) + 1, lost: make(chan struct{}),
		resign: make(chan struct{}), done: make(chan struct{})}
	z.mu.Lock()
	if z.stopState || z.cur.gen != cur.gen || !z.cur.ready {
		z.mu.Unlock()
		return Term{}, false, nil
	}
	z.elect.term = t
	if z.leaderID != id || z.leaderEp != t.epoch {
		z.leaderID, z.leaderEp = id, t.epoch
		z.notifyLocked()
	}
	z.termWG.Add(1)
	z.mu.Unlock()
	go z.watchTerm(t, cur, ev)
	z.log.Info("leadership acquired", zap.String("id", id), zap.Int64("epoch", t.epoch), zap.String("path", mine))
	return Term{Epoch: t.epoch, Lost: t.lost}, true, nil
}

// watchTerm ends the term at the first sign it may not hold: the session
// suspended or replaced, the node deleted, Resign or Stop.
func (z *ZK) watchTerm(t *zkTerm, cur sessionInfo, ev <-chan zk.Event) {
	defer z.termWG.Done()
	defer close(t.done)
	reason := ""
	for reason == "" {
		now, changed := z.session()
		switch {
		case now.gen != t.gen:
			reason = "zookeeper session expired"
			continue
		case !now.ready:
			reason = "zookeeper connection suspended"
			continue
		}
		select {
		case <-changed:
		case e, ok := <-ev:
			switch {
			case !ok:
				ev = nil // watch dropped with the session: the state says why
			case e.Type == zk.EventNodeDeleted:
				reason = "leader node deleted"
			default:
				exists, _, next, err := cur.conn.ExistsW(t.path)
				switch {
				case err == nil && !exists:
					reason = "leader node deleted"
				case err == nil:
					ev = next
				default:
					ev = nil
				}
			}
		case <-t.resign:
			reason = "resigned"
		case <-z.stopping:
			reason = "registry stopping"
		}
	}
	close(t.lost)
	z.log.Warn("leadership lost", zap.String("reason", reason), zap.Int64("epoch", t.epoch))
	z.mu.Lock()
	if z.elect.term == t {
		z.elect.term, z.elect.active, z.elect.token, z.elect.scrub = nil, false, "", true
	}
	z.mu.Unlock()
	if reason == "resigned" {
		// Free the lock now so a standby takes over without waiting for
		// this session to end; if that fails the loop removes it later.
		if now, _ := z.session(); now.ready && now.gen == t.gen {
			_ = now.conn.Delete(t.path, -1)
		}
	}
	z.kickLoop()
}

// Resign implements Elector; Lost is closed when it returns.
func (z *ZK) Resign() {
	z.mu.Lock()
	t := z.elect.term
	z.mu.Unlock()
	if t == nil {
		return
	}
	t.resignOnce.Do(func() { close(t.resign) })
	<-t.done
}

// Leader implements Elector from the in-memory view: the id in the lowest
// election node, or false while the connection is down or nobody
// campaigns.
func (z *ZK) Leader() (string, bool) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if !z.cur.ready || z.leaderID == "" {
		return "", false
	}
	return z.leaderID, true
}

// LeaderTerm implements TermReader from the in-memory view: the leader and
// the epoch of its term, read from its election node.
func (z *ZK) LeaderTerm() (string, int64, bool) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if !z.cur.ready || z.leaderID == "" {
		return "", 0, false
	}
	return z.leaderID, z.leaderEp, true
}

// clearOwn prepares a campaign: it deletes the nodes this session left
// behind and those of an earlier session with the same id, and returns our
// own node if an earlier create of this campaign went through unheard.
func (z *ZK) clearOwn(cur sessionInfo, id, token string) (string, error) {
	dir := z.paths.election
	names, _, err := cur.conn.Children(dir)
	if err != nil {
		return "", err
	}
	adopted := ""
	for _, name := range names {
		p := dir + "/" + name
		data, st, err := cur.conn.Get(p)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return "", err
		}
		var d electionData
		_ = json.Unmarshal(data, &d) // unreadable: not ours, left alone
		switch {
		case st.EphemeralOwner == cur.id && d.Campaign == token && adopted == "":
			adopted = p
			continue
		case st.EphemeralOwner == cur.id:
		case d.ID == id && d.ID != "":
			z.log.Info("removing an election node left by an earlier session of this id",
				zap.String("path", p), zap.String("old_session", sid(st.EphemeralOwner)))
		default:
			continue
		}
		if err := cur.conn.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return "", err
		}
	}
	return adopted, nil
}

// scrubElection (session loop) deletes this session's election nodes that
// no campaign or term uses any more: a term lost to a suspension, a
// campaign given up while disconnected.
func (s *session) scrubElection() error {
	z := s.z
	z.mu.Lock()
	need := z.elect.scrub
	z.elect.scrub = false
	z.mu.Unlock()
	if !need {
		return nil
	}
	err := s.doScrub()
	if err != nil {
		z.mu.Lock()
		z.elect.scrub = true
		z.mu.Unlock()
	}
	return err
}

func (s *session) doScrub() error {
	z := s.z
	dir := z.paths.election
	names, _, err := s.conn.Children(dir)
	if err != nil {
		return err
	}
	for _, name := range names {
		p := dir + "/" + name
		data, st, err := s.conn.Get(p)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return err
		}
		if st.EphemeralOwner != s.id {
			continue
		}
		var d electionData
		_ = json.Unmarshal(data, &d)
		z.mu.Lock()
		inUse := d.Campaign != "" && d.Campaign == z.elect.token // read after listing: see Campaign
		z.mu.Unlock()
		if inUse {
			continue
		}
		if err := s.conn.Delete(p, -1); err != nil && !errors.Is(err, zk.ErrNoNode) {
			return err
		}
		z.log.Info("removed a stale election node of ours", zap.String("path", p))
	}
	return nil
}

// sortBySeq orders election node names by their sequence suffix, dropping
// names without one.
func sortBySeq(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if seqOf(n) >= 0 {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return seqOf(out[i]) < seqOf(out[j]) })
	return out
}

// seqOf is the sequence number ZooKeeper appended to a node name (ten
// digits), or -1.
func seqOf(name string) int64 {
	i := strings.LastIndex(name, "_")
	if i < 0 {
		return -1
	}
	n, err := strconv.ParseInt(name[i+1:], 10, 64)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

func indexOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return -1
}

func newToken() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b) // crypto/rand does not fail on Linux
	return hex.EncodeToString(b)
}
