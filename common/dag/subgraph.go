package dag

import (
	"fmt"
	"strings"
)

// Scope says which tasks run when a run starts from chosen nodes.
type Scope int

// Scopes. The zero value is ScopeOnly so an unset field never widens a run.
const (
	// ScopeOnly runs just the start nodes.
	ScopeOnly Scope = iota
	// ScopeUpstream runs the start nodes and everything they depend on.
	ScopeUpstream
	// ScopeDownstream runs the start nodes and everything that depends on them.
	ScopeDownstream
)

var scopeNames = [...]string{"only", "upstream", "downstream"}

// String returns the lower-case name used in the API.
func (s Scope) String() string {
	if s < 0 || int(s) >= len(scopeNames) {
		return fmt.Sprintf("Scope(%d)", int(s))
	}
	return scopeNames[s]
}

// ParseScope maps "only", "upstream" or "downstream" to a Scope.
func ParseScope(s string) (Scope, error) {
	if s == "" {
		return ScopeOnly, nil // a run that names start nodes and no scope runs just them
	}
	for i, n := range scopeNames {
		if n == s {
			return Scope(i), nil
		}
	}
	return 0, fmt.Errorf("unknown scope %q: use %s", s, strings.Join(scopeNames[:], ", "))
}

// SubGraph returns the graph of the nodes a run starting from starts
// executes under scope, keeping the edges among kept nodes and spec order.
// It fails when starts is empty or names an unknown node.
func (g *Graph) SubGraph(starts []string, scope Scope) (*Graph, error) {
	if len(starts) == 0 {
		return nil, fmt.Errorf("dag: no start nodes")
	}
	idx := make([]int, len(starts))
	for k, n := range starts {
		i, ok := g.index[n]
		if !ok {
			return nil, fmt.Errorf("dag: unknown start node %q", n)
		}
		idx[k] = i
	}
	var keep []bool
	switch scope {
	case ScopeOnly:
		keep = make([]bool, len(g.names))
		for _, i := range idx {
			keep[i] = true
		}
	case ScopeUpstream:
		keep = g.reachMask(idx, g.up)
	case ScopeDownstream:
		keep = g.reachMask(idx, g.down)
	default:
		return nil, fmt.Errorf("dag: unknown scope %d", int(scope))
	}
	return g.restrict(keep), nil
}

// restrict builds the induced subgraph on the kept nodes. The topological
// order is recomputed rather than filtered from the parent's because the
// spec-order tie-break can pick differently once nodes are gone.
func (g *Graph) restrict(keep []bool) *Graph {
	newIdx := make([]int, len(g.names))
	sub := &Graph{index: make(map[string]int)}
	for i, ok := range keep {
		newIdx[i] = -1
		if ok {
			newIdx[i] = len(sub.names)
			sub.index[g.names[i]] = len(sub.names)
			sub.names = append(sub.names, g.names[i])
		}
	}
	sub.up = make([][]int, len(sub.names))
	sub.down = make([][]int, len(sub.names))
	for i, ok := range keep {
		if !ok {
			continue
		}
		// Ascending old indices map to ascending new ones, so lists stay sorted.
		for _, u := range g.up[i] {
			if keep[u] {
				sub.up[newIdx[i]] = append(sub.up[newIdx[i]], newIdx[u])
			}
		}
		for _, d := range g.down[i] {
			if keep[d] {
				sub.down[newIdx[i]] = append(sub.down[newIdx[i]], newIdx[d])
			}
		}
	}
	_ = sub.sort() // cannot fail: removing nodes from a DAG leaves a DAG
	return sub
}
