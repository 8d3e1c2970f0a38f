package spec

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// checkYAML walks a decoded YAML document and reports, each with its line,
// every unknown field (yaml.v3 stops at the first other error and drops the
// unknown fields it had collected), bad durations, and numbers that are not
// integers where an integer is wanted (yaml.v3 would turn retries: 1.5 into 1).
func checkYAML(root *yaml.Node) []string {
	c := &yamlChecker{seen: map[yamlVisit]bool{}}
	c.node(root, workflowShape(), nil)
	return c.problems
}

type yamlChecker struct {
	problems []string
	// seen stops aliases from making the walk revisit a node, which an
	// alias bomb would turn into an exponential walk.
	seen map[yamlVisit]bool
}

type yamlVisit struct {
	n  *yaml.Node
	sh *shape
}

func (c *yamlChecker) addf(line int, format string, args ...any) {
	if len(c.problems) < maxProblems {
		c.problems = append(c.problems, fmt.Sprintf("line %d: ", line)+fmt.Sprintf(format, args...))
	}
}

func (c *yamlChecker) node(n *yaml.Node, sh *shape, path *fieldPath) {
	if sh == nil {
		return
	}
	if n.Kind == yaml.AliasNode {
		// Only an alias can lead to a node twice; the document is a tree.
		for n.Kind == yaml.AliasNode && n.Alias != nil {
			n = n.Alias
		}
		if c.seen[yamlVisit{n, sh}] {
			return
		}
		c.seen[yamlVisit{n, sh}] = true
	}
	switch {
	case sh.names:
		if n.Kind != yaml.SequenceNode && n.ShortTag() != "!!null" {
			c.addf(n.Line, "%s: expected a list of names, such as [a, b]", path)
			return
		}
		for _, item := range n.Content {
			if item.Kind != yaml.ScalarNode {
				c.addf(item.Line, "%s: expected a list of names, such as [a, b]", path)
				return
			}
		}
	case n.Kind == yaml.MappingNode && sh.fields != nil:
		c.mapping(n, sh, path)
	case n.Kind == yaml.SequenceNode && sh.elem != nil:
		for i, item := range n.Content {
			c.node(item, sh.elem, path.item(i))
		}
	case n.Kind != yaml.ScalarNode || n.ShortTag() == "!!null":
		// A wrong kind is left to the decoder, which names it; null is zero.
	case sh.duration:
		if err := new(Duration).set(n.Value); err != nil {
			c.addf(n.Line, "%s: %v", path, err)
		}
	case sh.integer && n.ShortTag() != "!!int":
		c.addf(n.Line, "%s: expected an integer, got %q", path, n.Value)
	}
}

func (c *yamlChecker) mapping(n *yaml.Node, sh *shape, path *fieldPath) {
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if k.ShortTag() == "!!merge" {
			// "<<: *defaults" (or a list of them) merges a mapping in here.
			if v.Kind == yaml.SequenceNode {
				for _, m := range v.Content {
					c.node(m, sh, path)
				}
			} else {
				c.node(v, sh, path)
			}
			continue
		}
		f, known := sh.fields[k.Value]
		if !known {
			c.addf(k.Line, "%s", sh.unknownField(k.Value, path))
			continue
		}
		c.node(v, f, path.field(k.Value))
	}
}

// aliasSize measures a YAML document as it would be with every alias
// replaced by the node it names, without building that expansion: a scalar
// counts its value's length plus one, a collection one plus its contents.
// Each anchored node is measured once and remembered, so a billion-laughs
// document costs a walk of the nodes it writes, not of what they expand to.
type aliasSize struct {
	memo    map[*yaml.Node]int
	aliases int
}

// sizeLimit bounds every sum so that it cannot overflow.
const sizeLimit = 1 << 40

func (a *aliasSize) of(n *yaml.Node) int {
	if n.Kind == yaml.AliasNode {
		a.aliases++
		if n.Alias == nil {
			return 1
		}
		if s, ok := a.memo[n.Alias]; ok {
			return s
		}
		// An alias inside its own anchor's node would never end: measure it
		// as over every limit while it is being measured.
		a.memo[n.Alias] = sizeLimit
		s := a.of(n.Alias)
		a.memo[n.Alias] = s
		return s
	}
	s := 1 + len(n.Value)
	for _, c := range n.Content {
		s = min(s+a.of(c), sizeLimit)
	}
	return s
}

// checkAliases refuses a document whose aliases expand it past limit bytes:
// yaml.v3 would build the expansion (or, decoding into strings, share it
// until the spec is stored as its canonical form, written out in full).
func checkAliases(root *yaml.Node, limit int) string {
	a := &aliasSize{memo: map[*yaml.Node]int{}}
	size := a.of(root)
	if a.aliases == 0 || size <= limit {
		// Without aliases the document is as written, and the body limit
		// bounded that already.
		return ""
	}
	return fmt.Sprintf("YAML aliases expand the spec past %d bytes, the limit (%d aliases); write the repeated values out or use fewer aliases", limit, a.aliases)
}
