package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/api/client"
)

func instanceCommand(a *app) *cobra.Command {
	var f client.InstanceFilter
	list := &cobra.Command{
		Use:   "list",
		Short: "List workflow instances, newest first",
		Args:  args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.Limit < 0 || f.Offset < 0 {
				return usagef("--limit and --offset must not be negative")
			}
			l, err := a.client().ListInstances(cmd.Context(), f)
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(l)
			}
			t := newTable(a.stdout, "ID", "PROJECT", "WORKFLOW", "VERSION", "STATE", "STARTED", "DURATION", "HOST")
			for _, i := range l.Items {
				t.row(strconv.FormatInt(i.ID, 10), i.Project, i.Workflow, strconv.Itoa(i.Version), i.State,
					when(i.StartTime), took(i.StartTime, i.EndTime), i.Host)
			}
			if err := t.flush(); err != nil {
				return err
			}
			if int64(l.Offset+len(l.Items)) < l.Total || l.Offset > 0 {
				fmt.Fprintf(a.stdout, "(%d-%d of %d; use --offset for more)\n", l.Offset+1, l.Offset+len(l.Items), l.Total)
			}
			return nil
		},
	}
	list.Flags().StringVarP(&f.Project, "project", "p", "", "only this project")
	list.Flags().StringVar(&f.Workflow, "workflow", "", "only this workflow")
	list.Flags().StringVar(&f.State, "state", "", "only this state (submitted, running, paused, stopped, failed, succeeded...)")
	list.Flags().IntVar(&f.Limit, "limit", 0, "at most this many (server default 50, at most 1000)")
	list.Flags().IntVar(&f.Offset, "offset", 0, "skip this many")

	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show an instance and its task instances",
		Args:  args("ID"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			id, err := parseID("instance ID", argv[0])
			if err != nil {
				return err
			}
			d, err := a.client().GetInstancePage(cmd.Context(), id, client.InstanceQuery{Forecast: true})
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(d)
			}
			return a.printInstance(d)
		},
	}
	return group("instance", "Inspect and control workflow instances", append([]*cobra.Command{list, show, instanceDiffCommand(a)}, instanceActionCommands(a)...)...)
}

// trigger says how a run began: by hand, or by a schedule or backfill for
// which time.
func trigger(in api.Instance) string {
	s := in.CommandType
	if in.ScheduleID != 0 {
		s += fmt.Sprintf(" by schedule %d", in.ScheduleID)
	}
	if in.BackfillID != 0 {
		s += fmt.Sprintf(" by backfill %d", in.BackfillID)
	}
	if in.ScheduleTime != nil {
		s += " for " + when(in.ScheduleTime) + " UTC"
	}
	if in.DryRun {
		s += " (dry run)"
	}
	return s
}

func (a *app) printInstance(d api.InstanceDetail) error {
	kv := newTable(a.stdout, "INSTANCE", strconv.FormatInt(d.ID, 10))
	kv.row("workflow", versionLine(d))
	kv.row("state", d.State)
	kv.row("reason", d.Reason)
	kv.row("priority", d.Priority)
	kv.row("worker group", d.WorkerGroup)
	kv.row("master", d.Host)
	kv.row("run times", strconv.Itoa(d.RunTimes))
	kv.row("trigger", trigger(d.Instance))
	if d.Parent != nil {
		kv.row("parent", fmt.Sprintf("instance %d, task instance %d (sub_workflow)", d.Parent.InstanceID, d.Parent.TaskInstanceID))
	}
	kv.row("params", params(d.Params))
	kv.row("created", when(&d.CreatedAt))
	kv.row("started", when(d.StartTime))
	kv.row("ended", when(d.EndTime))
	kv.row("duration", took(d.StartTime, d.EndTime))
	forecastRows(kv, d.Forecast)
	if err := kv.flush(); err != nil {
		return err
	}
	fmt.Fprintln(a.stdout)
	t := newTable(a.stdout, "TASK ID", "NAME", "ATTEMPT", "STATE", "HOST", "PID", "EXIT", "STARTED", "DURATION")
	for _, ti := range d.Tasks {
		exit, pid := "", ""
		if ti.ExitCode != nil {
			exit = strconv.Itoa(*ti.ExitCode)
		}
		if ti.PID != 0 {
			pid = strconv.Itoa(ti.PID)
		}
		attempt := strconv.Itoa(ti.Attempt)
		if ti.Superseded {
			attempt += " (superseded)"
		}
		t.row(strconv.FormatInt(ti.ID, 10), ti.Name, attempt, ti.State, ti.Host, pid, exit,
			when(ti.StartTime), took(ti.StartTime, ti.EndTime))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if err := a.printProjection(d.Forecast); err != nil {
		return err
	}
	if err := a.printWaits(d); err != nil {
		return err
	}
	if err := a.printTaskLinks(d.Tasks); err != nil {
		return err
	}
	if err := a.printTaskParams(d.Tasks); err != nil {
		return err
	}
	if len(d.Outputs) > 0 {
		fmt.Fprintln(a.stdout)
		o := newTable(a.stdout, "OUTPUT", "VALUE", "TASK", "TASK ID")
		for _, out := range d.Outputs {
			o.row(out.Name, cell(out.Value), out.Task, strconv.FormatInt(out.TaskInstanceID, 10))
		}
		if err := o.flush(); err != nil {
			return err
		}
	}
	if len(d.History) == 0 {
		return nil
	}
	fmt.Fprintln(a.stdout)
	h := newTable(a.stdout, "HISTORY", "ACTION", "BY", "TASK ID", "DETAIL")
	for _, e := range d.History {
		task := ""
		if e.TaskInstanceID != nil {
			task = strconv.FormatInt(*e.TaskInstanceID, 10)
		}
		h.row(when(&e.At), e.Action, e.By, task, oneLine(e.Detail))
	}
	return h.flush()
}

// forecastRows are a running instance's projected end: when, on which
// critical path, against its deadline, and which parts are guessed.
func forecastRows(kv *table, f *api.Forecast) {
	if f == nil {
		return
	}
	end := when(&f.End) + " (p90 " + when(&f.P90End) + ")"
	if f.Deadline != nil {
		word := "on track for"
		if f.Late {
			word = "LATE for"
		}
		end += fmt.Sprintf(", %s deadline %s", word, when(f.Deadline))
	}
	kv.row("projected end", end)
	kv.row("critical path", strings.Join(f.CriticalPath, " -> "))
	if len(f.Slow) > 0 {
		kv.row("slow tasks", strings.Join(f.Slow, ", ")+" (past their p90)")
	}
	if len(f.NoHistory) > 0 {
		kv.row("no history", strings.Join(f.NoHistory, ", ")+" (counted 1m at p50, 2m at p90)")
	}
}

// projectedRows bounds the spans instance show prints: the critical path
// and the end row say the rest; --json has every span the API sent.
const projectedRows = 50

// printProjection lists the remaining tasks' projected spans (p50), in
// the order they are projected to run; nothing when none is left.
func (a *app) printProjection(f *api.Forecast) error {
	if f == nil || len(f.Tasks) == 0 {
		return nil
	}
	fmt.Fprintln(a.stdout)
	t := newTable(a.stdout, "PROJECTED", "STARTS", "ENDS", "TAKES")
	for i, ft := range f.Tasks {
		if i == projectedRows {
			break
		}
		name := ft.Name
		if ft.Running {
			name += " (running)"
		}
		t.row(name, when(&ft.Start), when(&ft.End), took(&ft.Start, &ft.End))
	}
	if err := t.flush(); err != nil {
		return err
	}
	if more := f.TasksTotal - min(len(f.Tasks), projectedRows); more > 0 {
		fmt.Fprintf(a.stdout, "... and %d more (--json lists up to %d)\n", more, len(f.Tasks))
	}
	return nil
}

// printTaskLinks lists the child runs of sub_workflow attempts and what
// master-run tasks (dependent) say they wait for; nothing when none has.
func (a *app) printTaskLinks(tasks []api.TaskInstance) error {
	var t *table
	for _, ti := range tasks {
		if ti.ChildInstanceID == nil && ti.Message == "" {
			continue
		}
		if t == nil {
			fmt.Fprintln(a.stdout)
			t = newTable(a.stdout, "TASK ID", "TASK", "CHILD INSTANCE", "MESSAGE")
		}
		child := ""
		if ti.ChildInstanceID != nil {
			child = strconv.FormatInt(*ti.ChildInstanceID, 10)
		}
		t.row(strconv.FormatInt(ti.ID, 10), ti.Name, child, cell(ti.Message))
	}
	if t == nil {
		return nil
	}
	return t.flush()
}

// printTaskParams lists each task attempt's params, leaving out the
// BELUGA_* built-ins that every task has (`beluga task show` lists them).
func (a *app) printTaskParams(tasks []api.TaskInstance) error {
	var t *table
	for _, ti := range tasks {
		for _, k := range sortedKeys(ti.Params) {
			if strings.HasPrefix(k, "BELUGA_") {
				continue
			}
			if t == nil {
				fmt.Fprintln(a.stdout)
				t = newTable(a.stdout, "TASK ID", "TASK", "PARAM", "VALUE")
			}
			t.row(strconv.FormatInt(ti.ID, 10), ti.Name, k, cell(ti.Params[k]))
		}
	}
	if t == nil {
		return nil
	}
	return t.flush()
}

// cellMax bounds a value in a table of many rows; `beluga task show`
// prints values whole.
const cellMax = 80

// cell is a value on one line, cut to cellMax runes.
func cell(s string) string {
	s = oneLine(s)
	if r := []rune(s); len(r) > cellMax {
		return string(r[:cellMax-1]) + "…"
	}
	return s
}

// oneLine keeps a table cell on its line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func params(p map[string]string) string {
	keys := sortedKeys(p)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + p[k]
	}
	return strings.Join(parts, " ")
}

func taskCommand(a *app) *cobra.Command {
	var offset int64
	var stream string
	logCmd := &cobra.Command{
		Use:   "log ID",
		Short: "Print a task instance's log",
		Args:  args("ID"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			id, err := parseID("task instance ID", argv[0])
			if err != nil {
				return err
			}
			if offset < 0 {
				return usagef("--offset must not be negative")
			}
			switch stream {
			case "", "all":
				_, err = a.client().TaskLog(cmd.Context(), id, offset, a.stdout)
				return err
			case "stdout", "stderr":
			default:
				return usagef("--stream %q: want all, stdout or stderr", stream)
			}
			_, recorded, err := a.client().TaskLogStream(cmd.Context(), id, offset, stream, a.stdout)
			if err == nil && !recorded {
				fmt.Fprintf(a.stderr, "note: the worker of task instance %d does not record stdout and stderr apart; all of its log counts as stdout\n", id)
			}
			return err
		},
	}
	logCmd.Flags().Int64Var(&offset, "offset", 0, "start at this byte (of the whole log)")
	logCmd.Flags().StringVar(&stream, "stream", "all", "print one stream only: stdout or stderr (all: both, interleaved)")

	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show a task instance",
		Args:  args("ID"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			id, err := parseID("task instance ID", argv[0])
			if err != nil {
				return err
			}
			t, err := a.client().GetTaskInstance(cmd.Context(), id)
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(t)
			}
			return a.printInstanceTask(t)
		},
	}
	return group("task", "Inspect and control task instances", append([]*cobra.Command{logCmd, show}, taskActionCommands(a)...)...)
}

func (a *app) printInstanceTask(t api.TaskInstance) error {
	kv := newTable(a.stdout, "TASK INSTANCE", strconv.FormatInt(t.ID, 10))
	kv.row("instance", strconv.FormatInt(t.WorkflowInstanceID, 10))
	kv.row("name", t.Name)
	kv.row("type", t.Type)
	kv.row("attempt", strconv.Itoa(t.Attempt))
	kv.row("state", t.State)
	kv.row("superseded", strconv.FormatBool(t.Superseded))
	kv.row("host", t.Host)
	kv.row("task group", t.TaskGroup)
	if t.Wait != nil {
		kv.row("waiting", waitText(*t.Wait))
	}
	kv.row("log", t.LogPath)
	exit := ""
	if t.ExitCode != nil {
		exit = strconv.Itoa(*t.ExitCode)
	}
	kv.row("exit code", exit)
	if t.ChildInstanceID != nil {
		kv.row("child instance", strconv.FormatInt(*t.ChildInstanceID, 10))
	}
	if t.Message != "" {
		kv.row("message", oneLine(t.Message))
	}
	if t.PID != 0 {
		kv.row("pid", strconv.Itoa(t.PID))
	}
	kv.row("submitted", when(t.SubmitTime))
	kv.row("dispatched", when(t.DispatchTime))
	kv.row("started", when(t.StartTime))
	kv.row("ended", when(t.EndTime))
	kv.row("duration", took(t.StartTime, t.EndTime))
	if err := kv.flush(); err != nil {
		return err
	}
	if err := a.printValues("PARAM", "(no params)", t.Params); err != nil {
		return err
	}
	return a.printValues("OUTPUT", "(no outputs)", t.Outputs)
}

// printValues writes a name/value table under a blank line, or none when
// m is empty. Values are shown whole; one holding a line break or tab is
// quoted, Go style, so the table keeps its shape.
func (a *app) printValues(header, none string, m map[string]string) error {
	fmt.Fprintln(a.stdout)
	if len(m) == 0 {
		_, err := fmt.Fprintln(a.stdout, none)
		return err
	}
	t := newTable(a.stdout, header, "VALUE")
	for _, k := range sortedKeys(m) {
		v := m[k]
		if strings.ContainsAny(v, "\n\r\t") {
			v = strconv.Quote(v)
		}
		t.row(k, v)
	}
	return t.flush()
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// printCompactJSON writes v on one line (a stream of events).
func (a *app) printCompactJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(a.stdout, "%s\n", b)
	return err
}
