package spec

import (
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/beluga-scheduler/beluga/common/dag"
	"github.com/beluga-scheduler/beluga/common/dataset"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/params"
	"github.com/beluga-scheduler/beluga/common/tasktype"
)

// TypeShell is the type of a task that names none. The types themselves
// are registered with common/tasktype.
const TypeShell = "shell"

// Timeout strategies. A task that times out is warned about, failed (killed,
// then retried like any failure), or both; a workflow is warned about or
// stopped.
const (
	TimeoutWarn     = "warn"
	TimeoutFail     = "fail"
	TimeoutWarnFail = "warn_fail"
	TimeoutStop     = "stop"
)

const (
	maxNameLen = 128
	maxRetries = 100
	// maxActiveRuns is far above any useful bound; it keeps the column an INT.
	maxActiveRuns = 1_000_000
	maxProblems   = 20
)

// ValidationError lists what is wrong with a spec, in the order found: parse
// problems with their line, then workflow fields, then each task in spec
// order, then a cycle. At most maxProblems are kept; Omitted counts the rest.
type ValidationError struct {
	Problems []string
	Omitted  int
}

func (e *ValidationError) Error() string {
	msg := "invalid workflow spec: " + strings.Join(e.Problems, "; ")
	if e.Omitted > 0 {
		msg += fmt.Sprintf("; and %d more", e.Omitted)
	}
	return msg
}

func invalid(problem string) *ValidationError { return &ValidationError{Problems: []string{problem}} }

// capped builds a ValidationError from a list that may be long.
func capped(problems []string) *ValidationError {
	if len(problems) <= maxProblems {
		return &ValidationError{Problems: problems}
	}
	return &ValidationError{Problems: problems[:maxProblems], Omitted: len(problems) - maxProblems}
}

// ApplyDefaults fills in what a spec may leave out: task type shell, failure
// strategy end, priority medium, worker group default, and a timeout strategy
// where a timeout is set (task: fail, so a stuck task is killed; workflow:
// warn, since stopping a whole run is drastic). A task's empty worker group
// is kept: it means "the run's worker group", which a run may override.
func (w *Workflow) ApplyDefaults() {
	if w.FailureStrategy == "" {
		w.FailureStrategy = string(model.FailureEnd)
	}
	if w.Priority == "" {
		w.Priority = model.PriorityMedium.String()
	}
	if w.WorkerGroup == "" {
		w.WorkerGroup = model.DefaultWorkerGroup
	}
	if w.Timeout > 0 && w.TimeoutStrategy == "" {
		w.TimeoutStrategy = TimeoutWarn
	}
	for i := range w.Tasks {
		t := &w.Tasks[i]
		if t.Type == "" {
			t.Type = TypeShell
		}
		if t.Priority == "" {
			t.Priority = model.PriorityMedium.String()
		}
		if t.Timeout > 0 && t.TimeoutStrategy == "" {
			t.TimeoutStrategy = TimeoutFail
		}
	}
}

// Validate reports every problem of the spec (up to a cap) as a
// *ValidationError. Empty optional fields count as their defaults, so it
// works before or after ApplyDefaults.
func (w *Workflow) Validate() error {
	v := &validator{}
	v.workflow(w)
	if len(v.problems) == 0 && v.omitted == 0 {
		return nil
	}
	return &ValidationError{Problems: v.problems, Omitted: v.omitted}
}

type validator struct {
	problems []string
	omitted  int
}

func (v *validator) addf(format string, args ...any) {
	if len(v.problems) >= maxProblems {
		v.omitted++
		return
	}
	v.problems = append(v.problems, fmt.Sprintf(format, args...))
}

func (v *validator) workflow(w *Workflow) {
	switch {
	case w.Name == "":
		v.addf("workflow name is required")
	case !validName(w.Name):
		v.addf("workflow: name %q: %s", w.Name, nameRule)
	}
	v.params("workflow", w.Params)
	v.secretParams("workflow", w.SecretParams, w.Params)
	if _, ok := model.ParsePriority(w.Priority); !ok {
		v.addf("workflow: priority %q: %s", w.Priority, priorityRule)
	}
	switch model.FailureStrategy(w.FailureStrategy) {
	case "", model.FailureEnd, model.FailureContinue:
	default:
		v.addf("workflow: failure_strategy %q: use end or continue", w.FailureStrategy)
	}
	v.timeout("workflow", w.Timeout, w.TimeoutStrategy, "use warn or stop", TimeoutWarn, TimeoutStop)
	if w.MaxActiveRuns != nil && (*w.MaxActiveRuns < 1 || *w.MaxActiveRuns > maxActiveRuns) {
		v.addf("workflow: max_active_runs %d: must be a positive integer of at most %d (omit it for no limit)", *w.MaxActiveRuns, maxActiveRuns)
	}
	v.workerGroup("workflow", w.WorkerGroup)
	v.tenant("workflow", w.Tenant)
	v.alerts("workflow", w.Alerts)
	v.deadline("workflow", w.Deadline)
	v.datasets(w)
	switch {
	case len(w.Tasks) == 0:
		v.addf("workflow has no tasks")
	case len(w.Tasks) > MaxTasks:
		// Checking each of them would only pile up more messages.
		v.addf("workflow has %d tasks, the limit is %d", len(w.Tasks), MaxTasks)
		return
	}
	v.tasks(w.Tasks)
}

func (v *validator) tasks(tasks []Task) {
	// first maps a name to the index of the task that owns it; later tasks
	// with the same name are reported and left out of the graph.
	first := make(map[string]int, len(tasks))
	for i := range tasks {
		n := tasks[i].Name
		if _, dup := first[n]; !dup && n != "" {
			first[n] = i
		}
	}
	nodes := make([]string, 0, len(tasks))
	edges := make([][2]string, 0, len(tasks))
	for i := range tasks {
		t := &tasks[i]
		owner := t.Name != "" && first[t.Name] == i
		switch {
		case t.Name == "":
			v.addf("%s: name is required", taskLabel(i, t))
		case !owner:
			v.addf("%s: duplicate name (task #%d and #%d)", taskLabel(i, t), first[t.Name]+1, i+1)
		case !validName(t.Name):
			v.addf("%s: bad name: %s", taskLabel(i, t), nameRule)
		}
		v.task(i, t)
		n := len(edges)
		edges = v.dependsOn(i, t, first, edges)
		if owner {
			nodes = append(nodes, t.Name)
		} else {
			edges = edges[:n] // a duplicate or unnamed task is not a node
		}
	}
	v.branches(tasks, first)
	// The graph gets only names that resolve, so a cycle is still found when
	// there are other problems. dag owns cycle detection for the whole project.
	if _, err := dag.New(nodes, edges); err != nil {
		var ce *dag.CycleError
		if errors.As(err, &ce) {
			v.addf("%s", ce.Error())
		} else {
			v.addf("%v", err) // cannot happen: names were checked above
		}
	}
}

// branches checks the tasks a branching type (conditions, switch) names:
// each must exist and be a direct downstream (depend on the branching task).
func (v *validator) branches(tasks []Task, first map[string]int) {
	for i := range tasks {
		t := &tasks[i]
		def, ok := tasktype.Lookup(t.Type)
		if !ok || def.Next == nil {
			continue
		}
		s, problems := def.Decode(t.TypeFields())
		if len(problems) > 0 {
			continue // reported by task
		}
		if def.HandlesFailure && len(t.DependsOn) == 0 {
			v.addf("%s: a %s task branches on its upstreams' outcome; it needs depends_on", taskLabel(i, t), def.Name)
		}
		named := def.Next(s)
		for _, n := range named {
			j, exists := first[n]
			switch {
			case !exists:
				v.addf("%s: branch names unknown task %q", taskLabel(i, t), n)
			case !slices.Contains(tasks[j].DependsOn, t.Name):
				v.addf("%s: branch names task %q, which is not a direct downstream (add depends_on: [%s] to it)", taskLabel(i, t), n, t.Name)
			}
		}
		for j := range tasks {
			if d := &tasks[j]; slices.Contains(d.DependsOn, t.Name) && d.Name != "" && !slices.Contains(named, d.Name) {
				v.addf("%s: task %q depends on it but no branch names it (it would always be skipped)", taskLabel(i, t), d.Name)
			}
		}
	}
}

// taskLabel names a task in a message; it is only built when there is one,
// since a valid 10,000-task spec should not format 10,000 strings.
func taskLabel(i int, t *Task) string {
	if t.Name == "" {
		return fmt.Sprintf("task #%d", i+1)
	}
	return fmt.Sprintf("task %q", t.Name)
}

func (v *validator) task(i int, t *Task) {
	label := func() string { return taskLabel(i, t) }
	typ := t.Type
	if typ == "" {
		typ = TypeShell
	}
	if def, ok := tasktype.Lookup(typ); !ok {
		v.addf("%s: unknown type %q (supported: %s)", label(), t.Type, strings.Join(tasktype.Names(), ", "))
	} else {
		_, problems := def.Decode(t.TypeFields())
		for _, p := range problems {
			v.addf("%s: %s", label(), p)
		}
	}
	if t.Retries < 0 || t.Retries > maxRetries {
		v.addf("%s: retries %d out of range 0..%d", label(), t.Retries, maxRetries)
	}
	if _, ok := model.ParsePriority(t.Priority); !ok {
		v.addf("%s: priority %q: %s", label(), t.Priority, priorityRule)
	}
	if t.TimeoutStrategy != "" {
		v.timeout(label(), t.Timeout, t.TimeoutStrategy, "use warn, fail or warn_fail",
			TimeoutWarn, TimeoutFail, TimeoutWarnFail)
	}
	if t.WorkerGroup != "" {
		v.workerGroup(label(), t.WorkerGroup)
	}
	if t.Tenant != "" {
		v.tenant(label(), t.Tenant)
	}
	if len(t.Params) > 0 {
		v.params(label(), t.Params)
	}
	if len(t.SecretParams) > 0 {
		v.secretParams(label(), t.SecretParams, t.Params)
	}
	for j, p := range t.Produces {
		if err := dataset.CheckProduces(p); err != nil {
			v.addf("%s: %v", label(), err)
		} else if slices.Contains(t.Produces[:j], p) {
			v.addf("%s: produces lists %q twice", label(), p)
		}
	}
}

// datasets checks on_datasets and late_data.
func (v *validator) datasets(w *Workflow) {
	seen := map[string]bool{}
	var ins []dataset.Input
	for _, e := range w.OnDatasets {
		in, err := dataset.ParseInput(e)
		if err != nil {
			v.addf("workflow: %v", err)
			continue
		}
		if seen[in.Dataset] {
			v.addf("workflow: on_datasets names dataset %q twice", in.Dataset)
		}
		seen[in.Dataset] = true
		ins = append(ins, in)
	}
	if w.RunGrain != "" {
		g, err := dataset.ParseGrain(w.RunGrain)
		switch {
		case err != nil:
			v.addf("workflow: run_grain: %v", err)
		case len(w.OnDatasets) == 0:
			v.addf("workflow: run_grain applies to on_datasets, which is empty")
		case g == dataset.Hourly && dataset.RunGrain(ins, "") == dataset.Daily:
			v.addf("workflow: run_grain hourly: an hourly run cannot wait for a daily input; use daily")
		}
	}
	switch w.LateData {
	case "", dataset.LateIgnore, dataset.LateRerun:
		if w.LateData != "" && len(w.OnDatasets) == 0 {
			v.addf("workflow: late_data applies to on_datasets, which is empty")
		}
	default:
		v.addf("workflow: late_data %q: use ignore or rerun", w.LateData)
	}
}

// dependsOn checks the dependency list and appends an edge for each
// dependency that resolves.
func (v *validator) dependsOn(i int, t *Task, first map[string]int, edges [][2]string) [][2]string {
	var seen map[string]bool // only built for long lists; most have one or two
	if len(t.DependsOn) > 8 {
		seen = make(map[string]bool, len(t.DependsOn))
	}
	for k, d := range t.DependsOn {
		var dup bool
		if seen != nil {
			dup = seen[d]
			seen[d] = true
		} else {
			dup = slices.Contains(t.DependsOn[:k], d)
		}
		_, exists := first[d]
		switch {
		case dup:
			v.addf("%s: depends_on lists %q twice", taskLabel(i, t), d)
		case d == t.Name:
			v.addf("%s: depends on itself", taskLabel(i, t))
		case !exists:
			v.addf("%s: depends_on names unknown task %q", taskLabel(i, t), d)
		default:
			edges = append(edges, [2]string{d, t.Name})
		}
	}
	return edges
}

func (v *validator) timeout(label string, d Duration, strategy, rule string, allowed ...string) {
	if strategy == "" {
		return
	}
	if !slices.Contains(allowed, strategy) {
		v.addf("%s: timeout_strategy %q: %s", label, strategy, rule)
		return
	}
	if d == 0 {
		v.addf("%s: timeout_strategy %q needs a timeout", label, strategy)
	}
}

func (v *validator) workerGroup(label, g string) {
	// Worker groups become registry path segments, so they follow the name rule.
	if g != "" && !validName(g) {
		v.addf("%s: worker_group %q: %s", label, g, nameRule)
	}
}

// tenantRule is the portable OS user name (POSIX, as useradd takes it).
var tenantRule = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)

// TenantRule says what a tenant name may be.
const TenantRule = "an OS user name: up to 32 lower-case letters, digits, '_' or '-', not starting with a digit or '-'"

// ErrTenantNotAllowed is CheckTenant's error: the API answers it 403.
var ErrTenantNotAllowed = errors.New("only an admin may name a tenant other than the project's")

// CheckTenant is the rule for who may name a tenant (docs/security.md,
// tenants): a workflow or task runs as the OS user it names, so naming one
// other than the project's own (which only an admin sets) takes an admin.
// It is checked when a spec is applied (byAdmin: the caller is) and again
// when its tasks run (byAdmin: the version's author is, now).
func CheckTenant(tenant, projectTenant string, byAdmin bool) error {
	if tenant == "" || tenant == projectTenant || byAdmin {
		return nil
	}
	if projectTenant == "" {
		return fmt.Errorf("tenant %q: the project has no tenant: %w", tenant, ErrTenantNotAllowed)
	}
	return fmt.Errorf("tenant %q: the project's is %q: %w", tenant, projectTenant, ErrTenantNotAllowed)
}

// ValidTenant says whether t is a tenant name.
func ValidTenant(t string) bool { return tenantRule.MatchString(t) }

func (v *validator) tenant(label, t string) {
	if t != "" && !tenantRule.MatchString(t) {
		v.addf("%s: tenant %q: %s", label, t, TenantRule)
	}
}

func (v *validator) params(label string, ps map[string]string) {
	if len(ps) == 0 {
		return
	}
	var bad, reserved, badValue []string
	for k, val := range ps {
		if !validEnvName(k) {
			bad = append(bad, k)
		} else if params.CheckName(k) != nil {
			reserved = append(reserved, k)
		} else if params.Check(val) != nil {
			badValue = append(badValue, k)
		}
	}
	slices.Sort(bad) // map order would make the message change between runs
	for _, k := range bad {
		v.addf("%s: param %q: a param name must be a valid environment variable name ([A-Za-z_][A-Za-z0-9_]*)", label, k)
	}
	slices.Sort(reserved)
	for _, k := range reserved {
		v.addf("%s: %v", label, params.CheckName(k))
	}
	slices.Sort(badValue)
	for _, k := range badValue {
		v.addf("%s: param %q: %v", label, k, params.Check(ps[k]))
	}
}

// secretParams checks a secret_params list: each entry names a param of
// the same level, once.
func (v *validator) secretParams(label string, names []string, ps map[string]string) {
	for i, n := range names {
		switch _, ok := ps[n]; {
		case slices.Contains(names[:i], n):
			v.addf("%s: secret_params lists %q twice", label, n)
		case !ok:
			v.addf("%s: secret_params names %q, which is not one of its params", label, n)
		}
	}
}

// SecretNames is every name a spec marks secret, at any level: a run's or
// a schedule's param of one of these names is secret too.
func (w *Workflow) SecretNames() []string {
	names := slices.Clone(w.SecretParams)
	for i := range w.Tasks {
		for _, n := range w.Tasks[i].SecretParams {
			if !slices.Contains(names, n) {
				names = append(names, n)
			}
		}
	}
	return names
}

const (
	nameRule     = "use 1 to 128 ASCII letters, digits, '_', '-' or '.'"
	priorityRule = "use highest, high, medium, low or lowest"
)

// ValidName reports whether s is a valid name of a workflow, task, project,
// worker group or task group. Names stay safe as file, path and log
// components: ASCII letters, digits, '_', '-', '.', at most 128 bytes, and
// not "." or "..".
func ValidName(s string) bool { return validName(s) }

// ValidEnvName reports whether s is a valid param name: params reach tasks
// as environment variables.
func ValidEnvName(s string) bool { return validEnvName(s) }

func validName(s string) bool {
	if s == "" || len(s) > maxNameLen || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(isLetter(c) || isDigit(c) || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// validEnvName: params reach tasks as environment variables.
func validEnvName(s string) bool {
	if s == "" || isDigit(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(isLetter(c) || isDigit(c) || c == '_') {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
