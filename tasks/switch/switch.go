// Package switchtask (directory tasks/switch; switch is a Go keyword) is the
// switch task type: a route on values, decided in the master. Each case's
// when is an expr-lang expression over the task's resolved params and its
// upstreams' outputs (all strings; int() and float() convert), compiled when
// the spec is applied. The first true case's next runs, else default; the
// other direct downstreams are skipped (master/flow). No true case and no
// default fails the task, naming the values it saw.
package switchtask

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/file"
	"github.com/expr-lang/expr/vm"

	"github.com/beluga-scheduler/beluga/common/tasktype"
)

// Case is one route.
type Case struct {
	When string   `json:"when"`
	Next []string `json:"next"`
}

// Spec is the switch type's fields.
type Spec struct {
	Cases   []Case   `json:"cases"`
	Default []string `json:"default,omitempty"`
}

// Type is the switch task type.
var Type = &tasktype.Def{
	Name:      "switch",
	Summary:   "branches on values",
	Placement: tasktype.Master,
	Spec:      func() tasktype.Spec { return &Spec{} },
	Check:     func(s tasktype.Spec) []string { return check(s.(*Spec)) },
	Next: func(s tasktype.Spec) []string {
		sp := s.(*Spec)
		var out []string
		for _, c := range sp.Cases {
			out = append(out, c.Next...)
		}
		return append(out, sp.Default...)
	},
	Decide: func(s tasktype.Spec, in tasktype.Inputs) (tasktype.Branch, error) {
		return decide(s.(*Spec), in.Params)
	},
}

// maxWhen bounds an expression's text.
const maxWhen = 4 << 10

func compile(when string) (*vm.Program, error) {
	return expr.Compile(when, expr.AsBool(), expr.AllowUndefinedVariables())
}

func check(s *Spec) []string {
	var problems []string
	if len(s.Cases) == 0 {
		problems = append(problems, "switch needs cases (a list of {when, next})")
	}
	for i, c := range s.Cases {
		switch {
		case strings.TrimSpace(c.When) == "":
			problems = append(problems, fmt.Sprintf("case %d: when is required", i+1))
			continue
		case len(c.When) > maxWhen:
			problems = append(problems, fmt.Sprintf("case %d: when is %d bytes, the limit is %d", i+1, len(c.When), maxWhen))
			continue
		}
		if _, err := compile(c.When); err != nil {
			problems = append(problems, fmt.Sprintf("case %d: when %q: %s", i+1, c.When, describe(err)))
		}
		problems = append(problems, tasktype.CheckNames(fmt.Sprintf("case %d: next", i+1), c.Next)...)
	}
	return append(problems, tasktype.CheckNames("default", s.Default)...)
}

// describe is an expr error on one line, with its position.
func describe(err error) string {
	var fe *file.Error
	if errors.As(err, &fe) {
		return fmt.Sprintf("%s at line %d, column %d", fe.Message, fe.Line, fe.Column+1)
	}
	return err.Error()
}

// decide evaluates the cases in order over vars; the first true one wins.
func decide(s *Spec, vars map[string]string) (tasktype.Branch, error) {
	env := make(map[string]any, len(vars))
	for k, v := range vars {
		env[k] = v
	}
	var seen []string // the variables the cases read
	for i, c := range s.Cases {
		prog, err := compile(c.When)
		if err != nil { // checked at apply; a stored spec is not re-checked
			return tasktype.Branch{}, fmt.Errorf("case %d: when %q: %s", i+1, c.When, describe(err))
		}
		seen = appendIdents(seen, prog)
		out, err := expr.Run(prog, env)
		if err != nil {
			return tasktype.Branch{}, fmt.Errorf("case %d: when %q: %s (values: %s)", i+1, c.When, describe(err), values(seen, vars))
		}
		if b, _ := out.(bool); b {
			return tasktype.Branch{Next: c.Next, Outputs: map[string]string{
				"case": strconv.Itoa(i + 1), "when": c.When, "values": values(seen, vars)}}, nil
		}
	}
	if s.Default != nil {
		return tasktype.Branch{Next: s.Default, Outputs: map[string]string{"case": "default", "values": values(seen, vars)}}, nil
	}
	return tasktype.Branch{}, fmt.Errorf("no case is true and there is no default (values: %s)", values(seen, vars))
}

type idents struct{ names []string }

func (v *idents) Visit(n *ast.Node) {
	if id, ok := (*n).(*ast.IdentifierNode); ok && !slices.Contains(v.names, id.Value) {
		v.names = append(v.names, id.Value)
	}
}

func appendIdents(names []string, prog *vm.Program) []string {
	v := &idents{names: names}
	node := prog.Node()
	ast.Walk(&node, v)
	return v.names
}

// values shows the variables the cases read and what they were.
func values(names []string, vars map[string]string) string {
	names = slices.Clone(names)
	sort.Strings(names)
	parts := make([]string, 0, len(names))
	for _, n := range names {
		v, ok := vars[n]
		if !ok {
			parts = append(parts, n+" unset")
			continue
		}
		if len(v) > 64 {
			v = v[:64] + "..."
		}
		parts = append(parts, fmt.Sprintf("%s=%q", n, v))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}
