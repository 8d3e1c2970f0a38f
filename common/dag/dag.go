// Package dag is the task graph of a workflow: built once per workflow
// instance from the spec, then only read, so one Graph may be shared by
// goroutines without locking.
//
// An edge [2]string{from, to} means from must finish before to starts.
// Everything that returns several names returns them in spec order (the order
// of the nodes given to New) so callers see the same result on every run.
package dag

import (
	"fmt"
	"slices"
	"strings"
)

// Graph is an immutable directed acyclic graph over node names. Nodes are
// held as integer indices (their spec position) so a 10,000-node graph costs a
// few slices, not maps of maps.
type Graph struct {
	names []string
	index map[string]int
	up    [][]int // direct upstreams of each node, ascending index
	down  [][]int // direct downstreams of each node, ascending index
	topo  []int   // computed once by New; the graph never changes
}

// CycleError reports a cycle. Path starts and ends with the same node, e.g.
// [a b c a] for a -> b -> c -> a; it starts at the cycle's node that comes
// first in spec order so the message is stable.
type CycleError struct {
	Path []string
}

func (e *CycleError) Error() string {
	return "cycle: " + strings.Join(e.Path, " -> ")
}

// New builds a graph. Duplicate edges are merged. It fails on an empty or
// duplicate node name, an edge naming an unknown node, or a cycle (a
// *CycleError naming the nodes on it).
func New(nodes []string, edges [][2]string) (*Graph, error) {
	g := &Graph{
		names: slices.Clone(nodes),
		index: make(map[string]int, len(nodes)),
		up:    make([][]int, len(nodes)),
		down:  make([][]int, len(nodes)),
	}
	for i, n := range nodes {
		if n == "" {
			return nil, fmt.Errorf("dag: node %d has an empty name", i+1)
		}
		if _, dup := g.index[n]; dup {
			return nil, fmt.Errorf("dag: duplicate node %q", n)
		}
		g.index[n] = i
	}
	// Resolve edges first, then lay every adjacency list out in two flat
	// arrays: two allocations instead of one per node.
	pairs := make([][2]int, len(edges))
	outdeg := make([]int, len(nodes))
	indeg := make([]int, len(nodes))
	for k, e := range edges {
		from, ok := g.index[e[0]]
		if !ok {
			return nil, fmt.Errorf("dag: edge %q -> %q: unknown node %q", e[0], e[1], e[0])
		}
		to, ok := g.index[e[1]]
		if !ok {
			return nil, fmt.Errorf("dag: edge %q -> %q: unknown node %q", e[0], e[1], e[1])
		}
		if from == to {
			return nil, &CycleError{Path: []string{e[0], e[0]}}
		}
		pairs[k] = [2]int{from, to}
		outdeg[from]++
		indeg[to]++
	}
	downFlat := make([]int, 0, len(edges))
	upFlat := make([]int, 0, len(edges))
	for i := range nodes {
		g.down[i] = downFlat[len(downFlat) : len(downFlat) : len(downFlat)+outdeg[i]]
		downFlat = downFlat[:len(downFlat)+outdeg[i]]
		g.up[i] = upFlat[len(upFlat) : len(upFlat) : len(upFlat)+indeg[i]]
		upFlat = upFlat[:len(upFlat)+indeg[i]]
	}
	for _, p := range pairs {
		g.down[p[0]] = append(g.down[p[0]], p[1])
		g.up[p[1]] = append(g.up[p[1]], p[0])
	}
	for i := range g.names {
		g.up[i] = sortedUnique(g.up[i])
		g.down[i] = sortedUnique(g.down[i])
	}
	if err := g.sort(); err != nil {
		return nil, err
	}
	return g, nil
}

// sortedUnique sorts s and drops repeats; edges usually arrive sorted, which
// the sort handles in linear time.
func sortedUnique(s []int) []int {
	if len(s) < 2 {
		return s
	}
	slices.Sort(s)
	return slices.Clip(slices.Compact(s))
}

// sort runs Kahn's algorithm, always taking the ready node that comes first
// in spec order, and stores the order. Nodes left over sit on or behind a
// cycle, which is then reported.
func (g *Graph) sort() error {
	n := len(g.names)
	indeg := make([]int, n)
	ready := make(minHeap, 0, n)
	for i := range n {
		indeg[i] = len(g.up[i])
		if indeg[i] == 0 {
			ready = append(ready, i) // ascending, so already a valid heap
		}
	}
	g.topo = make([]int, 0, n)
	for len(ready) > 0 {
		i := ready.pop()
		g.topo = append(g.topo, i)
		for _, d := range g.down[i] {
			indeg[d]--
			if indeg[d] == 0 {
				ready.push(d)
			}
		}
	}
	if len(g.topo) == n {
		return nil
	}
	return &CycleError{Path: g.findCycle(indeg)}
}

// findCycle returns a cycle among the nodes Kahn could not order
// (indeg > 0). Each of them has an upstream that is also left over, so walking
// upstream from any of them must revisit a node; the revisited stretch,
// reversed, is a cycle in edge direction.
func (g *Graph) findCycle(indeg []int) []string {
	start := slices.IndexFunc(indeg, func(d int) bool { return d > 0 })
	seen := make(map[int]int) // node -> position in walk
	var walk []int
	for i := start; ; {
		if at, ok := seen[i]; ok {
			walk = walk[at:]
			break
		}
		seen[i] = len(walk)
		walk = append(walk, i)
		for _, u := range g.up[i] {
			if indeg[u] > 0 {
				i = u
				break
			}
		}
	}
	slices.Reverse(walk)
	// Rotate so the cycle starts at its earliest node in spec order.
	first := 0
	for k, i := range walk {
		if i < walk[first] {
			first = k
		}
	}
	path := g.namesOf(slices.Concat(walk[first:], walk[:first]))
	return append(path, path[0])
}

// minHeap is a binary min-heap of node indices. It is written out rather than
// using container/heap, whose interface boxes every int it pushes.
type minHeap []int

func (h *minHeap) push(x int) {
	*h = append(*h, x)
	s := *h
	for i := len(s) - 1; i > 0; {
		p := (i - 1) / 2
		if s[p] <= s[i] {
			break
		}
		s[p], s[i] = s[i], s[p]
		i = p
	}
}

func (h *minHeap) pop() int {
	s := *h
	top := s[0]
	last := len(s) - 1
	s[0] = s[last]
	s = s[:last]
	for i := 0; ; {
		c := 2*i + 1
		if c >= len(s) {
			break
		}
		if c+1 < len(s) && s[c+1] < s[c] {
			c++
		}
		if s[i] <= s[c] {
			break
		}
		s[i], s[c] = s[c], s[i]
		i = c
	}
	*h = s
	return top
}

func (g *Graph) namesOf(idx []int) []string {
	out := make([]string, len(idx))
	for k, i := range idx {
		out[k] = g.names[i]
	}
	return out
}

// Len returns the number of nodes.
func (g *Graph) Len() int { return len(g.names) }

// Has reports whether n is a node.
func (g *Graph) Has(n string) bool {
	_, ok := g.index[n]
	return ok
}

// Nodes returns all nodes in spec order.
func (g *Graph) Nodes() []string { return slices.Clone(g.names) }

// Upstream returns the direct upstreams of n (nil for an unknown node).
func (g *Graph) Upstream(n string) []string {
	i, ok := g.index[n]
	if !ok {
		return nil
	}
	return g.namesOf(g.up[i])
}

// Downstream returns the direct downstreams of n (nil for an unknown node).
func (g *Graph) Downstream(n string) []string {
	i, ok := g.index[n]
	if !ok {
		return nil
	}
	return g.namesOf(g.down[i])
}

// Roots returns the nodes without upstreams: the ones a run starts with.
func (g *Graph) Roots() []string {
	var out []string
	for i, n := range g.names {
		if len(g.up[i]) == 0 {
			out = append(out, n)
		}
	}
	return out
}

// TopoOrder returns every node after all of its upstreams; among nodes that
// could go next, the one earliest in spec order goes first.
func (g *Graph) TopoOrder() []string { return g.namesOf(g.topo) }

// Descendants returns the starts and every node reachable downstream of them,
// in spec order. The starts are included because every caller wants "these
// and what follows" (rerun from a node, skip after a failure); unknown names
// are ignored.
func (g *Graph) Descendants(starts ...string) []string {
	return g.namesOf(g.reach(g.indices(starts), g.down))
}

// Ancestors returns the starts and every node they transitively depend on, in
// spec order; unknown names are ignored.
func (g *Graph) Ancestors(starts ...string) []string {
	return g.namesOf(g.reach(g.indices(starts), g.up))
}

func (g *Graph) indices(names []string) []int {
	out := make([]int, 0, len(names))
	for _, n := range names {
		if i, ok := g.index[n]; ok {
			out = append(out, i)
		}
	}
	return out
}

// reach marks starts and everything reachable over adj, and returns them in
// ascending index order.
func (g *Graph) reach(starts []int, adj [][]int) []int {
	return maskIndices(g.reachMask(starts, adj))
}

func (g *Graph) reachMask(starts []int, adj [][]int) []bool {
	seen := make([]bool, len(g.names))
	stack := make([]int, 0, len(starts))
	for _, s := range starts {
		if !seen[s] {
			seen[s] = true
			stack = append(stack, s)
		}
	}
	for len(stack) > 0 {
		i := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, j := range adj[i] {
			if !seen[j] {
				seen[j] = true
				stack = append(stack, j)
			}
		}
	}
	return seen
}

func maskIndices(mask []bool) []int {
	var out []int
	for i, ok := range mask {
		if ok {
			out = append(out, i)
		}
	}
	return out
}

// Ready reports whether every direct upstream of n is done. A root is always
// ready; an unknown node never is.
func (g *Graph) Ready(n string, done func(string) bool) bool {
	i, ok := g.index[n]
	if !ok {
		return false
	}
	for _, u := range g.up[i] {
		if !done(g.names[u]) {
			return false
		}
	}
	return true
}

// ReadyAfter returns, in spec order, the direct downstreams of n whose
// upstreams are all done. It is called the moment n has finished, so n counts
// as done whatever done(n) says; the caller may not have recorded it yet.
// Two upstreams finishing one after the other may both see a shared
// downstream as ready; the caller guards against submitting it twice.
func (g *Graph) ReadyAfter(n string, done func(string) bool) []string {
	i, ok := g.index[n]
	if !ok {
		return nil
	}
	var out []string
next:
	for _, d := range g.down[i] {
		for _, u := range g.up[d] {
			if u != i && !done(g.names[u]) {
				continue next
			}
		}
		out = append(out, g.names[d])
	}
	return out
}
