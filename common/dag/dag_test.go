package dag

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func e(from, to string) [2]string { return [2]string{from, to} }

func mustNew(t *testing.T, nodes []string, edges [][2]string) *Graph {
	t.Helper()
	g, err := New(nodes, edges)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return g
}

func eq(t *testing.T, what string, got, want []string) {
	t.Helper()
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !slices.Equal(got, want) {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

func TestShapes(t *testing.T) {
	t.Parallel()
	type neighbours struct{ node, up, down string } // comma-separated lists
	tests := []struct {
		name      string
		nodes     []string
		edges     [][2]string
		roots     string
		topo      string
		neighbour []neighbours
	}{
		{
			name:  "diamond",
			nodes: []string{"a", "b", "c", "d"},
			edges: [][2]string{e("a", "b"), e("a", "c"), e("b", "d"), e("c", "d")},
			roots: "a",
			topo:  "a,b,c,d",
			neighbour: []neighbours{
				{"a", "", "b,c"}, {"b", "a", "d"}, {"c", "a", "d"}, {"d", "b,c", ""},
			},
		},
		{
			name:  "diamond edges given out of order keep spec order",
			nodes: []string{"a", "b", "c", "d"},
			edges: [][2]string{e("c", "d"), e("b", "d"), e("a", "c"), e("a", "b"), e("a", "b")},
			roots: "a",
			topo:  "a,b,c,d",
			neighbour: []neighbours{
				{"a", "", "b,c"}, {"d", "b,c", ""},
			},
		},
		{
			name:  "chain listed backwards",
			nodes: []string{"c", "b", "a"},
			edges: [][2]string{e("a", "b"), e("b", "c")},
			roots: "a",
			topo:  "a,b,c",
			neighbour: []neighbours{
				{"a", "", "b"}, {"b", "a", "c"}, {"c", "b", ""},
			},
		},
		{
			name:  "fan-out",
			nodes: []string{"root", "x", "y", "z"},
			edges: [][2]string{e("root", "z"), e("root", "x"), e("root", "y")},
			roots: "root",
			topo:  "root,x,y,z",
			neighbour: []neighbours{
				{"root", "", "x,y,z"}, {"y", "root", ""},
			},
		},
		{
			name:  "disconnected",
			nodes: []string{"p", "q", "r", "s"},
			edges: [][2]string{e("s", "r")},
			roots: "p,q,s",
			topo:  "p,q,s,r",
			neighbour: []neighbours{
				{"p", "", ""}, {"r", "s", ""},
			},
		},
		{
			name:  "tie-break takes the earliest ready node",
			nodes: []string{"late", "b", "a"},
			edges: [][2]string{e("a", "late")},
			roots: "b,a",
			topo:  "b,a,late",
		},
		{
			name:  "empty",
			nodes: nil,
			roots: "",
			topo:  "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g := mustNew(t, tt.nodes, tt.edges)
			eq(t, "Nodes", g.Nodes(), tt.nodes)
			eq(t, "Roots", g.Roots(), split(tt.roots))
			eq(t, "TopoOrder", g.TopoOrder(), split(tt.topo))
			for _, nb := range tt.neighbour {
				eq(t, "Upstream("+nb.node+")", g.Upstream(nb.node), split(nb.up))
				eq(t, "Downstream("+nb.node+")", g.Downstream(nb.node), split(nb.down))
			}
		})
	}
}

func split(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}

func TestNewErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		nodes []string
		edges [][2]string
		want  string
		cycle string // when set, a *CycleError with this path
	}{
		{"duplicate node", []string{"a", "b", "a"}, nil, `duplicate node "a"`, ""},
		{"empty name", []string{"a", ""}, nil, "node 2 has an empty name", ""},
		{"unknown from", []string{"a"}, [][2]string{e("x", "a")}, `unknown node "x"`, ""},
		{"unknown to", []string{"a"}, [][2]string{e("a", "y")}, `unknown node "y"`, ""},
		{"self loop", []string{"a", "b"}, [][2]string{e("b", "b")}, "cycle: b -> b", "b,b"},
		{"two-cycle", []string{"a", "b"}, [][2]string{e("a", "b"), e("b", "a")}, "cycle: a -> b -> a", "a,b,a"},
		{
			"three-cycle starts at its earliest node",
			[]string{"x", "c", "a", "b"},
			[][2]string{e("a", "b"), e("b", "c"), e("c", "a"), e("x", "a")},
			"cycle: c -> a -> b -> c", "c,a,b,c",
		},
		{
			"cycle behind a tail is reported without the tail",
			[]string{"tail", "m", "n", "o"},
			[][2]string{e("m", "n"), e("n", "o"), e("o", "m"), e("o", "tail")},
			"cycle: m -> n -> o -> m", "m,n,o,m",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			g, err := New(tt.nodes, tt.edges)
			if err == nil {
				t.Fatalf("New = %v, want error %q", g.Nodes(), tt.want)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not contain %q", err, tt.want)
			}
			var ce *CycleError
			if got := errors.As(err, &ce); got != (tt.cycle != "") {
				t.Fatalf("errors.As(CycleError) = %v for %q", got, err)
			}
			if ce != nil {
				eq(t, "cycle path", ce.Path, split(tt.cycle))
			}
		})
	}
}

func TestReach(t *testing.T) {
	t.Parallel()
	//   a -> b -> d
	//   a -> c -> d -> e      f (alone)
	g := mustNew(t, []string{"a", "b", "c", "d", "e", "f"},
		[][2]string{e("a", "b"), e("a", "c"), e("b", "d"), e("c", "d"), e("d", "e")})
	eq(t, "Descendants(b)", g.Descendants("b"), split("b,d,e"))
	eq(t, "Descendants(c,f)", g.Descendants("c", "f"), split("c,d,e,f"))
	eq(t, "Descendants(e)", g.Descendants("e"), split("e"))
	eq(t, "Descendants(unknown)", g.Descendants("zzz"), nil)
	eq(t, "Ancestors(d)", g.Ancestors("d"), split("a,b,c,d"))
	eq(t, "Ancestors(b,f)", g.Ancestors("b", "f"), split("a,b,f"))
	eq(t, "Ancestors()", g.Ancestors(), nil)
}

func TestSubGraph(t *testing.T) {
	t.Parallel()
	g := mustNew(t, []string{"a", "b", "c", "d", "e", "f"},
		[][2]string{e("a", "b"), e("a", "c"), e("b", "d"), e("c", "d"), e("d", "e")})
	type adj struct{ node, up, down string }
	tests := []struct {
		name   string
		starts []string
		scope  Scope
		nodes  string
		topo   string
		adj    []adj
	}{
		{"only one", []string{"d"}, ScopeOnly, "d", "d", []adj{{"d", "", ""}}},
		{"only keeps edges among starts", []string{"e", "d", "b"}, ScopeOnly, "b,d,e", "b,d,e",
			[]adj{{"b", "", "d"}, {"d", "b", "e"}, {"e", "d", ""}}},
		{"upstream", []string{"d"}, ScopeUpstream, "a,b,c,d", "a,b,c,d",
			[]adj{{"a", "", "b,c"}, {"d", "b,c", ""}}},
		{"upstream of a root", []string{"a"}, ScopeUpstream, "a", "a", nil},
		{"downstream", []string{"b"}, ScopeDownstream, "b,d,e", "b,d,e",
			[]adj{{"b", "", "d"}, {"d", "b", "e"}}},
		{"downstream of two", []string{"c", "f"}, ScopeDownstream, "c,d,e,f", "c,d,e,f",
			[]adj{{"c", "", "d"}, {"d", "c", "e"}, {"f", "", ""}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sub, err := g.SubGraph(tt.starts, tt.scope)
			if err != nil {
				t.Fatalf("SubGraph: %v", err)
			}
			eq(t, "Nodes", sub.Nodes(), split(tt.nodes))
			eq(t, "TopoOrder", sub.TopoOrder(), split(tt.topo))
			for _, a := range tt.adj {
				eq(t, "Upstream("+a.node+")", sub.Upstream(a.node), split(a.up))
				eq(t, "Downstream("+a.node+")", sub.Downstream(a.node), split(a.down))
			}
			if sub.Has("zzz") || !sub.Has(tt.starts[0]) {
				t.Errorf("Has is wrong")
			}
		})
	}
	// The parent is unchanged.
	eq(t, "parent Nodes", g.Nodes(), split("a,b,c,d,e,f"))
	eq(t, "parent Downstream(a)", g.Downstream("a"), split("b,c"))

	for _, bad := range []struct {
		starts []string
		scope  Scope
		want   string
	}{
		{nil, ScopeOnly, "no start nodes"},
		{[]string{"a", "nope"}, ScopeDownstream, `unknown start node "nope"`},
		{[]string{"a"}, Scope(7), "unknown scope 7"},
	} {
		if _, err := g.SubGraph(bad.starts, bad.scope); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("SubGraph(%v, %v) error = %v, want %q", bad.starts, bad.scope, err, bad.want)
		}
	}
}

func TestSubGraphRecomputesOrder(t *testing.T) {
	t.Parallel()
	// In the full graph b runs before a (a waits for c); alone, a and b are
	// both roots and spec order decides.
	g := mustNew(t, []string{"a", "b", "c"}, [][2]string{e("c", "a")})
	eq(t, "full", g.TopoOrder(), split("b,c,a"))
	sub, err := g.SubGraph([]string{"b", "a"}, ScopeOnly)
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "sub", sub.TopoOrder(), split("a,b"))
}

func TestParseScope(t *testing.T) {
	t.Parallel()
	for _, s := range []Scope{ScopeOnly, ScopeUpstream, ScopeDownstream} {
		got, err := ParseScope(s.String())
		if err != nil || got != s {
			t.Errorf("ParseScope(%q) = %v, %v", s.String(), got, err)
		}
	}
	if _, err := ParseScope("sideways"); err == nil || !strings.Contains(err.Error(), `unknown scope "sideways"`) {
		t.Errorf("ParseScope(sideways) error = %v", err)
	}
}

func TestReady(t *testing.T) {
	t.Parallel()
	g := mustNew(t, []string{"a", "b", "c", "d", "e"},
		[][2]string{e("a", "b"), e("a", "c"), e("b", "d"), e("c", "d"), e("a", "e")})
	doneSet := func(names ...string) func(string) bool {
		return func(n string) bool { return slices.Contains(names, n) }
	}
	if !g.Ready("a", doneSet()) {
		t.Error("root a not ready")
	}
	if g.Ready("d", doneSet("a", "b")) {
		t.Error("d ready with c pending")
	}
	if !g.Ready("d", doneSet("b", "c")) {
		t.Error("d not ready with b and c done")
	}
	if g.Ready("zzz", doneSet()) {
		t.Error("unknown node ready")
	}
	// a just finished and is not recorded yet: all of its downstreams are ready.
	eq(t, "ReadyAfter(a)", g.ReadyAfter("a", doneSet()), split("b,c,e"))
	// b finished, c still running: d waits.
	eq(t, "ReadyAfter(b)", g.ReadyAfter("b", doneSet("a")), nil)
	// c finished after b: d is ready.
	eq(t, "ReadyAfter(c)", g.ReadyAfter("c", doneSet("a", "b")), split("d"))
	eq(t, "ReadyAfter(leaf)", g.ReadyAfter("d", doneSet("a", "b", "c")), nil)
	eq(t, "ReadyAfter(unknown)", g.ReadyAfter("zzz", doneSet()), nil)
}

func TestResultsAreCopies(t *testing.T) {
	t.Parallel()
	g := mustNew(t, []string{"a", "b"}, [][2]string{e("a", "b")})
	g.Nodes()[0] = "x"
	g.TopoOrder()[0] = "x"
	g.Downstream("a")[0] = "x"
	eq(t, "Nodes", g.Nodes(), split("a,b"))
	eq(t, "TopoOrder", g.TopoOrder(), split("a,b"))
	eq(t, "Downstream", g.Downstream("a"), split("b"))
}

func names(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("task_%05d", i)
	}
	return out
}

func chain(n int) ([]string, [][2]string) {
	nodes := names(n)
	edges := make([][2]string, 0, n-1)
	for i := 1; i < n; i++ {
		edges = append(edges, e(nodes[i-1], nodes[i]))
	}
	return nodes, edges
}

func fanOut(n int) ([]string, [][2]string) {
	nodes := names(n)
	edges := make([][2]string, 0, n-1)
	for i := 1; i < n; i++ {
		edges = append(edges, e(nodes[0], nodes[i]))
	}
	return nodes, edges
}

func TestLarge(t *testing.T) {
	t.Parallel()
	for name, build := range map[string]func(int) ([]string, [][2]string){"chain": chain, "fan-out": fanOut} {
		nodes, edges := build(10000)
		g := mustNew(t, nodes, edges)
		eq(t, name+" TopoOrder", g.TopoOrder(), nodes)
		if got := len(g.Descendants(nodes[0])); got != 10000 {
			t.Errorf("%s: Descendants(root) has %d nodes", name, got)
		}
		// A back edge closes the chain into one long cycle.
		if name == "chain" {
			_, err := New(nodes, append(edges, e(nodes[len(nodes)-1], nodes[0])))
			var ce *CycleError
			if !errors.As(err, &ce) || len(ce.Path) != 10001 || ce.Path[0] != nodes[0] {
				t.Errorf("long cycle: %v", err)
			}
		}
	}
}

func BenchmarkNewTopo(b *testing.B) {
	for name, build := range map[string]func(int) ([]string, [][2]string){"chain": chain, "fan-out": fanOut} {
		nodes, edges := build(10000)
		b.Run(name+"-10000", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				g, err := New(nodes, edges)
				if err != nil {
					b.Fatal(err)
				}
				if len(g.TopoOrder()) != len(nodes) {
					b.Fatal("short order")
				}
			}
		})
	}
}

// TestRandomAgainstNaive checks New, TopoOrder, reach and SubGraph on random
// DAGs against slow, obviously correct versions. The seed is fixed.
func TestRandomAgainstNaive(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		n := 1 + rng.IntN(30)
		nodes := names(n)
		// Edges go from a lower to a higher rank in a random permutation, so
		// the graph is acyclic but spec order is not a topological order.
		rank := rng.Perm(n)
		var edges [][2]string
		adj := make([][]bool, n)
		for i := range adj {
			adj[i] = make([]bool, n)
		}
		for range rng.IntN(3 * n) {
			a, b := rng.IntN(n), rng.IntN(n)
			if rank[a] < rank[b] {
				edges = append(edges, e(nodes[a], nodes[b]))
				adj[a][b] = true
			}
		}
		g := mustNew(t, nodes, edges)

		// Naive Kahn: repeatedly take the first node in spec order whose
		// upstreams are all placed.
		placed := make([]bool, n)
		var want []string
		for len(want) < n {
			for i := range n {
				if placed[i] {
					continue
				}
				ok := true
				for u := range n {
					if adj[u][i] && !placed[u] {
						ok = false
					}
				}
				if ok {
					placed[i] = true
					want = append(want, nodes[i])
					break
				}
			}
		}
		eq(t, fmt.Sprintf("round %d TopoOrder", round), g.TopoOrder(), want)

		start := rng.IntN(n)
		reach := func(down bool) []string {
			seen := make([]bool, n)
			seen[start] = true
			for changed := true; changed; {
				changed = false
				for a := range n {
					for b := range n {
						from, to := a, b
						if !down {
							from, to = b, a
						}
						if adj[a][b] && seen[from] && !seen[to] {
							seen[to], changed = true, true
						}
					}
				}
			}
			var out []string
			for i, ok := range seen {
				if ok {
					out = append(out, nodes[i])
				}
			}
			return out
		}
		eq(t, "Descendants", g.Descendants(nodes[start]), reach(true))
		eq(t, "Ancestors", g.Ancestors(nodes[start]), reach(false))
		sub, err := g.SubGraph([]string{nodes[start]}, ScopeDownstream)
		if err != nil {
			t.Fatal(err)
		}
		eq(t, "SubGraph nodes", sub.Nodes(), reach(true))
		for _, m := range sub.Nodes() {
			var up []string
			for _, u := range g.Upstream(m) {
				if sub.Has(u) {
					up = append(up, u)
				}
			}
			eq(t, "SubGraph Upstream("+m+")", sub.Upstream(m), up)
		}
	}
}
