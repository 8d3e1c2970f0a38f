package registry

import (
	"context"
	"sort"
	"sync"
)

// Memory is the in-process registry used by standalone and unit tests. It
// is always connected, and its election is an in-process lock: the first
// campaigner wins, others wait until it resigns; every win has a new epoch.
type Memory struct {
	mu    sync.Mutex
	nodes map[Role]map[string]Node
	subs  map[int]chan struct{}
	next  int

	leader string
	epoch  int64
	lost   chan struct{} // non-nil while a term is held; closed when it ends
}

// NewMemory returns an empty registry.
func NewMemory() *Memory {
	return &Memory{nodes: map[Role]map[string]Node{}, subs: map[int]chan struct{}{}}
}

// Register implements Registry.
func (m *Memory) Register(_ context.Context, n Node) error {
	m.mu.Lock()
	if m.nodes[n.Role] == nil {
		m.nodes[n.Role] = map[string]Node{}
	}
	m.nodes[n.Role][n.Addr] = n
	m.notifyLocked()
	m.mu.Unlock()
	return nil
}

// Deregister implements Registry.
func (m *Memory) Deregister(_ context.Context, role Role, addr string) error {
	m.mu.Lock()
	delete(m.nodes[role], addr)
	m.notifyLocked()
	m.mu.Unlock()
	return nil
}

// Nodes implements Registry, sorted by address.
func (m *Memory) Nodes(role Role) []Node {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Node, 0, len(m.nodes[role]))
	for _, n := range m.nodes[role] {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	return out
}

// Changes implements Registry.
func (m *Memory) Changes() (<-chan struct{}, func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	id := m.next
	m.next++
	ch := make(chan struct{}, 1)
	m.subs[id] = ch
	return ch, func() {
		m.mu.Lock()
		delete(m.subs, id)
		m.mu.Unlock()
	}
}

func (m *Memory) notifyLocked() {
	for _, ch := range m.subs {
		select {
		case ch <- struct{}{}:
		default: // a signal is already pending
		}
	}
}

// States implements StateWatcher: the in-process registry is connected from
// the start and never changes.
func (m *Memory) States() (<-chan ConnState, func()) {
	ch := make(chan ConnState, 1)
	ch <- Connected
	return ch, func() {}
}

// RaiseEpoch makes every later term's epoch greater than e: a process that
// starts over on a DB whose recorded leader term is e (standalone after a
// restart) is elected with an epoch the fence accepts.
func (m *Memory) RaiseEpoch(e int64) {
	m.mu.Lock()
	m.epoch = max(m.epoch, e)
	m.mu.Unlock()
}

// Campaign implements Elector.
func (m *Memory) Campaign(ctx context.Context, id string) (Term, error) {
	for {
		m.mu.Lock()
		if m.lost == nil {
			m.epoch++
			m.leader = id
			m.lost = make(chan struct{})
			t := Term{Epoch: m.epoch, Lost: m.lost}
			m.notifyLocked() // followers of the leader (workers) hear of it at once
			m.mu.Unlock()
			return t, nil
		}
		held := m.lost
		m.mu.Unlock()
		select {
		case <-held:
		case <-ctx.Done():
			return Term{}, ctx.Err()
		}
	}
}

// Resign implements Elector.
func (m *Memory) Resign() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lost != nil {
		close(m.lost)
		m.lost, m.leader = nil, ""
		m.notifyLocked()
	}
}

// Leader implements Elector.
func (m *Memory) Leader() (string, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.leader, m.lost != nil
}

// LeaderTerm implements TermReader.
func (m *Memory) LeaderTerm() (string, int64, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.leader, m.epoch, m.lost != nil
}
