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
	c.node(root, workflowShape, nil)
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
