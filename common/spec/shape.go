package spec

import (
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/beluga-scheduler/beluga/common/tasktype"
)

// shape is what the JSON and YAML checkers know about a value of the spec:
// the fields of an object, the shape of a list's elements, or a leaf that
// needs a closer look than the decoders give it. nil means anything goes;
// the decoder still checks its type.
type shape struct {
	what     string            // "the workflow" or "a task", for messages
	fields   map[string]*shape // known keys of an object
	elem     *shape            // element of a list
	duration bool              // a Duration: a string time.ParseDuration takes
	integer  bool              // an int: yaml.v3 would truncate 1.5 to 1
	names    bool              // a list of strings: yaml.v3's error names no field
}

// workflowShape is derived from the json tags of types.go, so the checkers
// follow the structs. yaml tags are the same names. Made on first use: the
// binary registers the task types at start, after package init.
var workflowShape = sync.OnceValue(func() *shape {
	s := shapeOf(reflect.TypeFor[Workflow](), "the workflow")
	// A task also takes the fields of the registered types; which of them
	// belong to its own type is checked by Validate (common/tasktype).
	task := s.fields["tasks"].elem
	for _, f := range tasktype.FieldNames() {
		if _, ok := task.fields[f]; !ok {
			task.fields[f] = nil
		}
	}
	return s
})

func shapeOf(t reflect.Type, what string) *shape {
	switch {
	case t == reflect.TypeFor[Duration]():
		return &shape{duration: true}
	case t.Kind() == reflect.Int, t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Int:
		return &shape{integer: true}
	case t == reflect.TypeFor[[]string]():
		return &shape{names: true}
	case t.Kind() == reflect.Struct:
		s := &shape{what: what, fields: map[string]*shape{}}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name != "" && name != "-" {
				s.fields[name] = shapeOf(f.Type, "a task")
			}
		}
		return s
	case t.Kind() == reflect.Pointer && t.Elem().Kind() == reflect.Struct: // alerts
		s := shapeOf(t.Elem(), what)
		s.what = "alerts"
		return s
	case t.Kind() == reflect.Slice && t.Elem().Kind() == reflect.Struct:
		return &shape{elem: shapeOf(t.Elem(), "a task")}
	}
	return nil
}

// unknownField describes a key sh does not have, naming where it sits and,
// for a likely typo, the field meant.
func (sh *shape) unknownField(key string, path *fieldPath) string {
	var b strings.Builder
	fmt.Fprintf(&b, "unknown field %q in %s", key, sh.what)
	if path != nil {
		fmt.Fprintf(&b, " (%s)", path)
	}
	best, bestDist := "", 3 // further than 2 edits is not a typo
	for f := range sh.fields {
		if d := editDistance(strings.ToLower(key), f); d < bestDist || d == bestDist && f < best {
			best, bestDist = f, d
		}
	}
	if best != "" {
		fmt.Fprintf(&b, "; did you mean %q?", best)
	}
	return b.String()
}

// editDistance is the Levenshtein distance of two short strings.
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return len(a) + len(b) // not worth comparing; never a typo
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// fieldPath locates a value, e.g. tasks[2].timeout. It is a linked list built
// as a walk descends and only turned into text for a problem, so walking a
// large spec does not build a string per key.
type fieldPath struct {
	parent *fieldPath
	key    string
	index  int
	inList bool // index, not key, names this step
}

func (p *fieldPath) String() string {
	switch {
	case p == nil:
		return ""
	case p.inList:
		return fmt.Sprintf("%s[%d]", p.parent, p.index)
	case p.parent == nil:
		return p.key
	}
	return p.parent.String() + "." + p.key
}

func (p *fieldPath) field(key string) *fieldPath { return &fieldPath{parent: p, key: key} }
func (p *fieldPath) item(i int) *fieldPath       { return &fieldPath{parent: p, index: i, inList: true} }
