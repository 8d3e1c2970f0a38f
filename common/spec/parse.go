package spec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"gopkg.in/yaml.v3"
)

// Limits on a spec. They bound the memory and time one request can cost:
// a 100,000-task spec of short commands (~45 bytes a task as YAML) fits in
// MaxSpecBytes with room for longer ones, and its stored form (defaults
// spelled out, ~1.8x) stays under MariaDB's default max_allowed_packet of
// 16 MiB. Parsing and validating one at the limits takes ~3 s of CPU.
const (
	MaxSpecBytes = 8 << 20
	MaxTasks     = 100000
)

// ErrTooLarge marks a spec body over MaxSpecBytes, so an API can answer 413.
var ErrTooLarge = errors.New("spec too large")

// Parse decodes a spec written as JSON (the first non-blank byte is '{') or
// YAML, applies defaults and validates it. Decoding is strict: unknown or
// duplicate fields, a second YAML document and data after the JSON object are
// errors. Every error is the input's fault: it wraps ErrTooLarge or is a
// *ValidationError whose message names each problem with its line or task.
func Parse(data []byte) (*Workflow, error) {
	if len(data) > MaxSpecBytes {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, len(data), MaxSpecBytes)
	}
	w, err := parse(data)
	if err != nil {
		return nil, err
	}
	// Parsed, a spec is no larger than written unless YAML aliases repeat
	// parts of it, and checkAliases bounds those; this holds it whatever the
	// decoder did.
	if n := w.contentSize(); n > MaxSpecBytes {
		return nil, invalid(fmt.Sprintf("the spec holds %d bytes once parsed, the limit is %d", n, MaxSpecBytes))
	}
	return w, nil
}

// ParseStored is Parse without the size limit, for a spec read back from
// storage. Canonical spells out defaults, so the stored form of a spec that
// was just under MaxSpecBytes can be over it.
func ParseStored(data []byte) (*Workflow, error) { return parse(data) }

func parse(data []byte) (*Workflow, error) {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf")) // a BOM some editors add
	body := bytes.TrimLeft(data, " \t\r\n")
	if len(body) == 0 {
		return nil, invalid("spec is empty")
	}
	var (
		w        *Workflow
		problems []string
	)
	if body[0] == '{' {
		w, problems = decodeJSON(data)
	} else {
		w, problems = decodeYAML(data)
	}
	if len(problems) > 0 {
		return nil, capped(problems)
	}
	w.ApplyDefaults()
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return w, nil
}

func decodeJSON(data []byte) (*Workflow, []string) {
	// The token walk finds, with line numbers, what encoding/json would report
	// without a position (unknown field, bad duration) or not at all
	// (duplicate keys, wrongly cased keys). The decoder below then only has
	// type mismatches left to report.
	if problems := checkJSON(data); len(problems) > 0 {
		return nil, problems
	}
	// Unknown fields were reported above; the type fields of a task are
	// not Task's and are picked up below.
	dec := json.NewDecoder(bytes.NewReader(data))
	var w Workflow
	if err := dec.Decode(&w); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, []string{fmt.Sprintf("line %d: %s: expected %s, got %s",
				lineAt(data, te.Offset), te.Field, jsonTypeName(te.Type.Kind().String()), te.Value)}
		}
		return nil, []string{strings.TrimPrefix(err.Error(), "json: ")}
	}
	// The type fields of each task, which the struct has no place for.
	var raw struct {
		Tasks []map[string]json.RawMessage `json:"tasks"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, []string{strings.TrimPrefix(err.Error(), "json: ")}
	}
	for i, m := range raw.Tasks {
		if i < len(w.Tasks) {
			w.Tasks[i].Fields = typeFields(m)
		}
	}
	return &w, nil
}

// typeFields keeps the keys of a task object that are not Task's own.
func typeFields(m map[string]json.RawMessage) map[string]json.RawMessage {
	var out map[string]json.RawMessage
	for k, v := range m {
		if !taskCoreFields[k] {
			if out == nil {
				out = map[string]json.RawMessage{}
			}
			out[k] = v
		}
	}
	return out
}

func jsonTypeName(kind string) string {
	switch {
	case strings.HasPrefix(kind, "int"):
		return "an integer"
	case kind == "map":
		return "an object of strings"
	case kind == "slice":
		return "a list"
	default:
		return "a " + kind
	}
}

// yamlTypeNames makes yaml.v3's "into spec.Task" read as the user's words.
var yamlTypeNames = strings.NewReplacer("spec.Workflow", "a workflow", "spec.Task", "a task",
	"spec.Duration", "a duration")

func decodeYAML(data []byte) (*Workflow, []string) {
	// Decode to a node tree first: checkYAML reports from it what the struct
	// decoder would not (see there), then the tree is decoded into the struct.
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, []string{"spec is empty"}
		}
		return nil, []string{err.Error()}
	}
	// One document only: a second one would be silently ignored otherwise.
	// A bare trailing "---" is harmless and allowed.
	for {
		var extra yaml.Node
		err := dec.Decode(&extra)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, []string{err.Error()}
		}
		if len(extra.Content) > 0 && extra.Content[0].ShortTag() != "!!null" {
			return nil, []string{fmt.Sprintf("line %d: a spec is one YAML document, found another", extra.Content[0].Line)}
		}
	}
	if len(doc.Content) > 0 {
		if problem := checkAliases(doc.Content[0], MaxSpecBytes); problem != "" {
			return nil, []string{problem}
		}
		if problems := checkYAML(doc.Content[0]); len(problems) > 0 {
			return nil, problems
		}
	}
	var w Workflow
	if err := doc.Decode(&w); err != nil {
		var te *yaml.TypeError
		if errors.As(err, &te) {
			out := make([]string, len(te.Errors))
			for i, e := range te.Errors {
				out[i] = yamlTypeNames.Replace(e)
			}
			return nil, out
		}
		return nil, []string{yamlTypeNames.Replace(err.Error())}
	}
	var raw struct {
		Tasks []map[string]any `yaml:"tasks"`
	}
	if err := doc.Decode(&raw); err != nil {
		return nil, []string{yamlTypeNames.Replace(err.Error())}
	}
	var problems []string
	for i, m := range raw.Tasks {
		if i >= len(w.Tasks) {
			break
		}
		for k, v := range m {
			if taskCoreFields[k] {
				continue
			}
			b, err := json.Marshal(v)
			if err != nil {
				problems = append(problems, fmt.Sprintf("%s: field %q: %v", taskLabel(i, &w.Tasks[i]), k, err))
				continue
			}
			if w.Tasks[i].Fields == nil {
				w.Tasks[i].Fields = map[string]json.RawMessage{}
			}
			w.Tasks[i].Fields[k] = b
		}
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return &w, nil
}

func lineAt(data []byte, off int64) int {
	off = min(max(off, 0), int64(len(data)))
	return 1 + bytes.Count(data[:off], []byte("\n"))
}

// contentSize is the number of bytes of text the spec holds.
func (w *Workflow) contentSize() int {
	n := len(w.Name) + len(w.Description) + len(w.FailureStrategy) + len(w.TimeoutStrategy) +
		len(w.Priority) + len(w.WorkerGroup) + mapSize(w.Params) + listSize(w.SecretParams)
	for i := range w.Tasks {
		t := &w.Tasks[i]
		n += len(t.Name) + len(t.Description) + len(t.Type) + len(t.Command) + mapSize(t.Params) +
			len(t.TimeoutStrategy) + len(t.Priority) + len(t.WorkerGroup) + len(t.TaskGroup) + listSize(t.SecretParams)
		for k, v := range t.Fields {
			n += len(k) + len(v)
		}
		for _, d := range t.DependsOn {
			n += len(d)
		}
	}
	return n
}

func mapSize(m map[string]string) int {
	n := 0
	for k, v := range m {
		n += len(k) + len(v)
	}
	return n
}

func listSize(l []string) int {
	n := 0
	for _, s := range l {
		n += len(s)
	}
	return n
}
