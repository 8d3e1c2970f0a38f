// Package tasktype is the seam task types plug into. A task type is one
// package (tasks/<name>) that declares a Def: its spec fields and their
// validation, where it runs, the payload its Dispatch carries, its dry-run
// behaviour and its executor. The binaries register the shipped types at
// start (tasks/builtin.Register, called from cmd/...); the spec parser, the
// master's runner, the worker's executor, the API's GET /api/v1/task-types
// and the generated OpenAPI and UI files (go generate ./api) only ever ask
// this registry, so adding a type touches its package and one line there.
//
// The stable API: Def, Spec, Inputs, Job, Outcome, Register, Lookup, Names,
// All, Info.
package tasktype

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
)

// Placement says where a type's tasks run.
type Placement string

const (
	// Worker types are dispatched to a worker of the task's group.
	Worker Placement = "worker"
	// Master types (logic: sub_workflow, conditions, ...) run in the
	// leader's runner, never dispatched.
	Master Placement = "master"
)

// Spec is a type's decoded spec fields: a pointer to the type's own struct,
// whose json tags name the fields ("command", "url", ...).
type Spec any

// Inputs is what a type sees when the master resolves a task for one
// attempt: the params it runs with, resolved (see common/params.ForTask).
type Inputs struct {
	TaskInstanceID     int64
	WorkflowInstanceID int64
	Task               string
	Params             map[string]string
	// Upstreams is, for Decide, the state of the latest attempt of each
	// direct upstream in this run ("succeeded", "failed", "skipped", ...).
	Upstreams map[string]string
	// Datasource looks up a managed datasource by name (the master reads
	// it from the database at each dispatch); nil where there is none to
	// read, and an error naming it when it does not exist.
	Datasource func(name string) (Datasource, error)
}

// Datasource is a managed datasource as the master reads it: connection
// details with the password still sealed (common/secret). The worker
// that runs the task opens it with its own key file, so the password never
// crosses the cluster link in clear text.
type Datasource struct {
	Name           string            `json:"name"`
	Type           string            `json:"type"`
	Host           string            `json:"host,omitempty"`
	Port           int               `json:"port,omitempty"`
	Database       string            `json:"database,omitempty"`
	User           string            `json:"user,omitempty"`
	PasswordSealed string            `json:"password_sealed,omitempty"`
	Params         map[string]string `json:"params,omitempty"`
}

// Branch is what a branching type decided.
type Branch struct {
	Next    []string          // the direct downstreams that run
	Outputs map[string]string // shown on the task (what it chose and saw)
}

// BranchNext is the output under which the runner records a branching
// task's choice (comma-separated task names), so a rebuild reads it back.
const BranchNext = "next"

// Ref is a workflow a task refers to. Project "" is the task's own.
// Version 0 is the latest.
type Ref struct {
	Project  string
	Workflow string
	Version  int
	Child    bool // runs it as a child run (sub_workflow), not only reads its runs
}

// Attempt is one attempt of a master-run task as the leader hands it to a
// type's Start and Cancel: opaque to the type, which gives it back to the
// Host.
type Attempt interface{ TaskInstanceID() int64 }

// CancelReason says why a master-run attempt is cancelled.
type CancelReason string

const (
	CancelStop    CancelReason = "stop"    // a stop of the instance or a kill of the task: it ends killed
	CancelPause   CancelReason = "pause"   // a pause: it ends paused and goes on at resume
	CancelTimeout CancelReason = "timeout" // it ran past its timeout: it ends failed
)

// Host is what the leader offers the master face of long-running types:
// its services that carry an attempt until it ends. The master implements
// it; a new type picks the services it needs.
type Host interface {
	// StartChild runs the workflow of the spec's child Ref (Refs) as the
	// attempt's child run, with the task's params as its startup params;
	// the attempt ends as the child ends, with its outputs.
	StartChild(ctx context.Context, a Attempt)
	// CancelChild stops or pauses the child run.
	CancelChild(ctx context.Context, a Attempt, why CancelReason)
	// StartWait waits for runs of other workflows (a dependent spec); the
	// attempt ends when they satisfy it, or fail it.
	StartWait(ctx context.Context, a Attempt)
	// CancelWait stops waiting.
	CancelWait(ctx context.Context, a Attempt, why CancelReason)
}

// Job is one attempt as a worker-side executor sees it.
type Job struct {
	TaskInstanceID int64
	Name           string
	Command        string            // Dispatch.Command: a process type's text
	Payload        json.RawMessage   // Dispatch.Payload: what Def.Payload built
	Params         map[string]string // resolved params (the process environment of shell and python)
	Dir            string            // the attempt's work dir
	Log            io.Writer         // the task's log
	Config         map[string]string // worker settings a type reads ("python": the interpreter)
}

// Outcome is how an in-process executor's attempt ended. Err set: the task
// failed and Err's text is its message. Outputs are the values it exports.
type Outcome struct {
	Outputs map[string]string
	Err     error
}

// Def declares a task type.
type Def struct {
	Name      string
	Placement Placement
	// Summary says in a few words what a task of the type does ("a shell
	// command on a worker"): the API's list and the UI's palette show it.
	Summary string
	// Spec returns a new pointer to the type's zero spec struct. Its json
	// tags are the type's fields; decoding into it is strict.
	Spec func() Spec
	// Check validates a decoded spec; each problem is a phrase without the
	// task's name ("url is required"). nil: anything that decodes is fine.
	Check func(s Spec) []string
	// Command returns the spec's text for Dispatch.Command (process types);
	// nil: none.
	Command func(s Spec) string
	// Payload resolves the spec for one attempt into what the worker needs,
	// JSON-encoded into Dispatch.Payload. nil: no payload. An error fails
	// the attempt (a bad param reference, an unknown datasource).
	Payload func(s Spec, in Inputs) (any, error)
	// DryRun is what a dry run of a task does: the outputs it pretends to
	// export, or an error that fails it. nil: succeeds with no outputs.
	DryRun func(s Spec, in Inputs) (map[string]string, error)
	// Datasource names the managed datasource a spec uses ("" none): a
	// spec naming one that does not exist is refused when applied, and a
	// datasource in use by a workflow's latest version is not deleted.
	Datasource func(s Spec) string
	// Refs names the workflows a spec refers to (sub_workflow, dependent):
	// one that does not exist is refused when applied, and Child refs may
	// not lead back to the workflow (recursion). nil: none.
	Refs func(s Spec) []Ref

	// Master side, branching types (conditions, switch): decided in the
	// runner as the task is written, never dispatched.

	// Decide chooses which direct downstreams run (the others are
	// skipped) and what the task shows as its outputs. An error fails the
	// task with its text.
	Decide func(s Spec, in Inputs) (Branch, error)
	// Next lists every task the spec names as a branch; each must exist
	// and depend on the task (checked when the spec is applied).
	Next func(s Spec) []string
	// HandlesFailure: the task runs once its upstreams end, failed or
	// not; a failure that flows only into such tasks does not fail the
	// instance (conditions).
	HandlesFailure bool

	// Master side, long-running types (sub_workflow, dependent): the
	// master face. The leader starts an attempt and it ends later, when
	// something outside the task does (a child run, the runs it waits
	// for). Each calls the leader's service it needs on the Host, so the
	// master never switches on type names. A master type has Decide or
	// Start, and Cancel with Start; one with neither fails its tasks
	// ("not supported").

	// Start begins the attempt; it ends through the Host's service.
	Start func(ctx context.Context, h Host, a Attempt)
	// Cancel ends a started attempt early (a stop, a pause, its timeout).
	Cancel func(ctx context.Context, h Host, a Attempt, why CancelReason)

	// Worker side: exactly one of Argv, Run and Child for a Worker type.

	// Argv is the process a process type runs: argv[0] is looked up in
	// PATH. The executor gives it the same handling as shell (process
	// group, kill, timeout, log, work dir, outputs from stdout and
	// $BELUGA_OUTPUT).
	Argv func(j Job) ([]string, error)
	// Run runs an in-process type's attempt until it ends or ctx is done
	// (a kill or the task's timeout).
	Run func(ctx context.Context, j Job) Outcome
	// Child runs the attempt in a child process of this binary, started
	// and handled like a process type's (task user, sandbox, work dir,
	// log, kill, timeout): for code that should not run with the worker's
	// rights and files (child.go).
	Child *Child
}

var (
	mu    sync.RWMutex
	types = map[string]*Def{}
	order []*Def // registration order: the palette's
)

// Register adds a type; a bad or second definition of a name panics, since
// registration is the binary's own code at start (a programming error).
func Register(d *Def) {
	if d == nil || d.Name == "" || d.Spec == nil {
		panic("tasktype: Register needs a name and a Spec")
	}
	if d.Placement != Worker && d.Placement != Master {
		panic(fmt.Sprintf("tasktype %s: placement %q: want worker or master", d.Name, d.Placement))
	}
	if n := btoi(d.Argv != nil) + btoi(d.Run != nil) + btoi(d.Child != nil); d.Placement == Worker && n != 1 {
		panic(fmt.Sprintf("tasktype %s: a worker type has exactly one of Argv, Run and Child", d.Name))
	}
	if d.Child != nil && (d.Child.Input == nil || d.Child.Main == nil) {
		panic(fmt.Sprintf("tasktype %s: a Child needs Input and Main", d.Name))
	}
	if d.Placement == Master && (d.Decide != nil && d.Start != nil || (d.Start == nil) != (d.Cancel == nil)) {
		panic(fmt.Sprintf("tasktype %s: a master type has Decide, or Start and Cancel", d.Name))
	}
	mu.Lock()
	defer mu.Unlock()
	if _, dup := types[d.Name]; dup {
		panic("tasktype: " + d.Name + " registered twice")
	}
	types[d.Name] = d
	order = append(order, d)
}

// All lists the registered types in the order they were registered.
func All() []*Def {
	mu.RLock()
	defer mu.RUnlock()
	return slices.Clone(order)
}

// Lookup returns the registered type of that name.
func Lookup(name string) (*Def, bool) {
	mu.RLock()
	defer mu.RUnlock()
	d, ok := types[name]
	return d, ok
}

// Names lists the registered types, sorted.
func Names() []string {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]string, 0, len(types))
	for n := range types {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// FieldNames is the union of every registered type's field names: the
// spec's shape checkers let these through and Decode judges them per type.
func FieldNames() []string {
	mu.RLock()
	defer mu.RUnlock()
	seen := map[string]bool{}
	var out []string
	for _, d := range types {
		for _, f := range fieldsOf(d) {
			if !seen[f] {
				seen[f] = true
				out = append(out, f)
			}
		}
	}
	sort.Strings(out)
	return out
}

// Fields are the names of d's spec fields, in struct order.
func (d *Def) Fields() []string { return fieldsOf(d) }

func fieldsOf(d *Def) []string {
	t := reflect.TypeOf(d.Spec())
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			out = append(out, name)
		}
	}
	return out
}

// ErrUnknown marks a type name nobody registered.
var ErrUnknown = errors.New("unknown task type")

// UnknownError names an unknown type and the known ones.
func UnknownError(name string) error {
	return fmt.Errorf("%w %q (supported: %s)", ErrUnknown, name, strings.Join(Names(), ", "))
}

// Decode decodes a task's type fields (name -> JSON value) strictly into
// the type's spec and checks it. problems name each issue (unknown field
// for the type, wrong value type, what Check found); the spec is usable only
// when there are none.
func (d *Def) Decode(fields map[string]json.RawMessage) (Spec, []string) {
	s := d.Spec()
	known := d.Fields()
	var problems []string
	keys := make([]string, 0, len(fields))
	for k := range fields {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !slices.Contains(known, k) {
			if len(known) == 0 {
				problems = append(problems, fmt.Sprintf("field %q does not belong to type %s (it has no type fields)", k, d.Name))
			} else {
				problems = append(problems, fmt.Sprintf("field %q does not belong to type %s (its fields: %s)", k, d.Name, strings.Join(known, ", ")))
			}
			delete(fields, k)
		}
	}
	if len(problems) > 0 {
		return nil, problems
	}
	raw, err := json.Marshal(fields)
	if err != nil {
		return nil, []string{err.Error()}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(s); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, []string{fmt.Sprintf("field %q: expected %s, got %s", te.Field, te.Type.String(), te.Value)}
		}
		return nil, []string{strings.TrimPrefix(err.Error(), "json: ")}
	}
	if d.Check != nil {
		problems = d.Check(s)
	}
	if len(problems) > 0 {
		return nil, problems
	}
	return s, nil
}

// CheckNames checks a branching type's list of task names (field names
// the list in a problem): each present, once.
func CheckNames(field string, names []string) []string {
	var problems []string
	for i, n := range names {
		switch {
		case strings.TrimSpace(n) == "":
			problems = append(problems, fmt.Sprintf("%s[%d]: empty task name", field, i))
		case slices.Contains(names[:i], n):
			problems = append(problems, fmt.Sprintf("%s lists %q twice", field, n))
		}
	}
	return problems
}

// Field is one of a type's spec fields as clients see it: its name and its
// JSON type ("string", "integer", "number", "boolean", "array", "object";
// "" for a field that takes more than one shape, such as sql's string or
// list of statements). Items is an array's element type.
type Field struct {
	Name  string `json:"name"`
	Type  string `json:"type,omitempty"`
	Items string `json:"items,omitempty"`
}

// Info is a type as clients see it: GET /api/v1/task-types serves it, and
// the OpenAPI task spec and the UI's palette are generated from it.
type Info struct {
	Name      string    `json:"name"`
	Summary   string    `json:"summary"`
	Placement Placement `json:"placement"`
	Fields    []Field   `json:"fields"`
}

// Info describes d.
func (d *Def) Info() Info {
	t := reflect.TypeOf(d.Spec())
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	fields := []Field{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		typ, items := jsonType(f.Type)
		fields = append(fields, Field{Name: name, Type: typ, Items: items})
	}
	return Info{Name: d.Name, Summary: d.Summary, Placement: d.Placement, Fields: fields}
}

// Describe is Info of every registered type, in registration order.
func Describe() []Info {
	all := All()
	out := make([]Info, len(all))
	for i, d := range all {
		out[i] = d.Info()
	}
	return out
}

var unmarshaler = reflect.TypeFor[json.Unmarshaler]()

// jsonType is the JSON type a Go field decodes from; a type with its own
// decoding may take several ("").
func jsonType(t reflect.Type) (typ, items string) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Implements(unmarshaler) || reflect.PointerTo(t).Implements(unmarshaler) {
		return "", ""
	}
	switch t.Kind() {
	case reflect.String:
		return "string", ""
	case reflect.Bool:
		return "boolean", ""
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "integer", ""
	case reflect.Float32, reflect.Float64:
		return "number", ""
	case reflect.Slice, reflect.Array:
		it, _ := jsonType(t.Elem())
		return "array", it
	case reflect.Map, reflect.Struct:
		return "object", ""
	}
	return "", ""
}
