package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/api/client"
	"github.com/beluga-scheduler/beluga/common/plan"
	"github.com/beluga-scheduler/beluga/common/schedule"
)

// backfillCommand is `beluga backfill start|list|show|stop`.
func backfillCommand(a *app) *cobra.Command {
	var project string
	g := group("backfill", "Run a workflow once per schedule time of a past range",
		backfillStartCommand(a, needProject(&project)), backfillListCommand(a, &project), backfillShowCommand(a), backfillStopCommand(a))
	g.PersistentFlags().StringVarP(&project, "project", "p", os.Getenv("BELUGA_PROJECT"), "project (env BELUGA_PROJECT)")
	return g
}

const dateOnly = "2006-01-02"

func backfillStartCommand(a *app, need projectFunc) *cobra.Command {
	var (
		req         client.BackfillRequest
		paramFlags  []string
		parallelism int
		from, to    string
		asPlan      bool
		downstream  string
	)
	c := &cobra.Command{
		Use:   "start NAME --from T --to T",
		Short: "Run a workflow once per schedule time of a past range",
		Long: "Run workflow NAME once for each fire time of a cron in [--from, --to], both ends included\n" +
			"(at most 1000 times), as if its schedule had fired then: each run has the schedule time,\n" +
			"so $[...] time params resolve to the time being backfilled.\n\n" +
			"--from and --to take an RFC 3339 time (2026-11-01T02:00:00+08:00) or a date (2026-11-01).\n" +
			"A date is read in the cron's zone: --timezone with --cron, else the schedule's timezone;\n" +
			"--from DATE starts at that midnight, --to DATE includes the whole day.\n\n" +
			"--cron and --timezone are as in 'beluga schedule set'; without --cron the workflow's\n" +
			"schedule gives both. The master submits the runs in order (--order asc, oldest first, or\n" +
			"desc) with at most --parallelism unfinished at a time. --on-failure stop submits no more\n" +
			"after a run fails; continue (default) goes on. Each time runs once, across master\n" +
			"failovers too.",
		Args: args("NAME"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			project, err := need()
			if err != nil {
				return err
			}
			if from == "" || to == "" {
				return usagef("--from and --to are required, e.g. --from 2026-11-01 --to 2026-11-30")
			}
			if req.Params, err = parseParams(paramFlags); err != nil {
				return err
			}
			if cmd.Flags().Changed("parallelism") {
				req.Parallelism = &parallelism
			}
			cl := a.client()
			if req.Start, req.End, err = backfillRange(cmd.Context(), cl, project, argv[0], req, from, to); err != nil {
				return err
			}
			if asPlan {
				if _, err := plan.ParseDownstream(downstream); err != nil {
					return usagef("--downstream: %v", err)
				}
				p, err := cl.BackfillPlan(cmd.Context(), project, argv[0], req, downstream)
				if err != nil {
					return err
				}
				if a.json() {
					return a.printJSON(p)
				}
				return printPlan(a.stdout, p)
			}
			if downstream != "" {
				return usagef("--downstream needs --plan (then: beluga plan apply ID)")
			}
			b, err := cl.StartBackfill(cmd.Context(), project, argv[0], req)
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(b)
			}
			msg := fmt.Sprintf("backfill %d of %s/%s started: %d run(s), %d at a time", b.ID, b.Project, b.Workflow, b.Total, b.Parallelism)
			if n := len(b.Times); n > 0 {
				loc := zoneNamed(b.Timezone)
				msg += fmt.Sprintf(", first %s, last %s", inZone(&b.Times[0], loc), inZone(&b.Times[n-1], loc))
			}
			if b.Calendar != "" {
				msg += "; " + calendarSummary(b)
			}
			_, err = fmt.Fprintln(a.stdout, msg)
			return err
		},
	}
	f := c.Flags()
	f.StringVar(&from, "from", "", "first schedule time: RFC 3339, or a date (its midnight)")
	f.StringVar(&to, "to", "", "last schedule time: RFC 3339, or a date (the whole day)")
	f.StringVar(&req.Cron, "cron", "", "cron expression (default: the workflow's schedule's)")
	f.StringVar(&req.Timezone, "timezone", "", "IANA zone the cron is read in, with --cron (default UTC)")
	f.IntVar(&parallelism, "parallelism", 1, "at most this many runs unfinished at a time (1 to 100)")
	f.StringVar(&req.Order, "order", "", "asc (default, oldest first) or desc (newest first)")
	f.StringVar(&req.OnFailure, "on-failure", "", "continue (default) or stop: a failed run stops submitting the rest")
	f.StringVar(&req.Priority, "priority", "", "highest, high, medium, low or lowest (default: the workflow's)")
	f.StringVar(&req.WorkerGroup, "worker-group", "", "worker group (default: the workflow's)")
	f.StringArrayVar(&paramFlags, "param", nil, "run param NAME=VALUE (repeatable)")
	f.BoolVar(&req.DryRun, "dry-run", false, "record every task as succeeded without running it")
	f.BoolVar(&asPlan, "plan", false, "print what the backfill would run (each time's run, downstream runs, waits, estimates, conflicts) and keep it as a plan; start nothing")
	f.StringVar(&downstream, "downstream", "", "with --plan: follow workflows that depend on each time's run: none (default), direct or all")
	f.StringVar(&req.By, "by", defaultBy(), "no longer used: the logged-in user is recorded (kept for old scripts)")
	return c
}

// backfillRange turns --from and --to into RFC 3339 times. Dates are read
// in the zone of the cron: --timezone with --cron, else the schedule's
// (UTC when there is none; the server then asks for a cron).
func backfillRange(ctx context.Context, cl *client.Client, project, workflow string, req client.BackfillRequest, from, to string) (string, string, error) {
	var loc *time.Location
	zone := func() (*time.Location, error) {
		if loc != nil {
			return loc, nil
		}
		tz := req.Timezone
		if req.Cron == "" && tz == "" {
			s, err := cl.GetSchedule(ctx, project, workflow)
			var ae *client.APIError
			switch {
			case err == nil:
				tz = s.Timezone
			case !errors.As(err, &ae) || ae.Status != http.StatusNotFound:
				return nil, err
			}
		}
		l, err := schedule.Location(tz)
		if err != nil {
			return nil, usagef("--timezone: %v", err)
		}
		loc = l
		return loc, nil
	}
	var out [2]string
	for i, f := range []struct{ flag, v string }{{"--from", from}, {"--to", to}} {
		if _, err := time.Parse(time.RFC3339Nano, f.v); err == nil {
			out[i] = f.v
			continue
		}
		if _, err := time.Parse(dateOnly, f.v); err != nil {
			return "", "", usagef("%s %q: use a date such as 2026-11-01 or an RFC 3339 time such as 2026-11-01T02:00:00+08:00", f.flag, f.v)
		}
		l, err := zone()
		if err != nil {
			return "", "", err
		}
		d, _ := time.ParseInLocation(dateOnly, f.v, l)
		if i == 1 { // the whole day: fire times are whole seconds, so its last second
			d = time.Date(d.Year(), d.Month(), d.Day()+1, 0, 0, 0, 0, l).Add(-time.Second)
		}
		out[i] = d.Format(time.RFC3339Nano)
	}
	return out[0], out[1], nil
}

func backfillListCommand(a *app, project *string) *cobra.Command {
	var f client.BackfillFilter
	c := &cobra.Command{
		Use:   "list",
		Short: "List backfills, newest first: of --project, or of every project",
		Args:  args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.Project = *project
			bs, err := a.client().ListBackfills(cmd.Context(), f)
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(api.List[api.Backfill]{Items: bs})
			}
			t := newTable(a.stdout, "ID", "PROJECT", "WORKFLOW", "STATE", "SUBMITTED", "SUCCEEDED", "FAILED", "UNFINISHED", "CREATED (UTC)", "BY")
			for _, b := range bs {
				t.row(strconv.FormatInt(b.ID, 10), b.Project, b.Workflow, b.State, fmt.Sprintf("%d/%d", b.Submitted, b.Total),
					strconv.Itoa(b.Progress.Succeeded), strconv.Itoa(b.Progress.Failed), strconv.Itoa(b.Progress.Unfinished),
					when(&b.CreatedAt), b.RequestedBy)
			}
			return t.flush()
		},
	}
	c.Flags().StringVar(&f.Workflow, "workflow", "", "only this workflow")
	c.Flags().StringVar(&f.State, "state", "", "only this state: running, done, failed or stopped")
	return c
}

func backfillShowCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show a backfill, its progress, and each schedule time with its run",
		Args:  args("ID"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			id, err := parseID("backfill ID", argv[0])
			if err != nil {
				return err
			}
			cl := a.client()
			b, err := cl.GetBackfill(cmd.Context(), id)
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(b)
			}
			runs, err := backfillRuns(cmd.Context(), cl, b)
			if err != nil {
				return err
			}
			return a.printBackfill(b, runs)
		},
	}
}

// backfillRuns maps the submitted schedule times of b (UnixNano) to their
// runs (a backfill has at most 1000).
func backfillRuns(ctx context.Context, cl *client.Client, b api.Backfill) (map[int64]api.Instance, error) {
	runs := map[int64]api.Instance{}
	if b.Submitted == 0 {
		return runs, nil
	}
	l, err := cl.ListInstances(ctx, client.InstanceFilter{Backfill: b.ID, Limit: 1000})
	if err != nil {
		return nil, err
	}
	for _, in := range l.Items {
		if in.ScheduleTime != nil {
			runs[in.ScheduleTime.UnixNano()] = in
		}
	}
	return runs, nil
}

func (a *app) printBackfill(b api.Backfill, runs map[int64]api.Instance) error {
	loc := zoneNamed(b.Timezone)
	kv := newTable(a.stdout, "BACKFILL", strconv.FormatInt(b.ID, 10))
	kv.row("workflow", b.Project+"/"+b.Workflow)
	kv.row("state", b.State)
	kv.row("reason", oneLine(b.Reason))
	kv.row("cron", b.Cron)
	kv.row("timezone", zoneName(b.Timezone))
	if b.Calendar != "" {
		kv.row("calendar", calendarSummary(b))
	}
	kv.row("from", inZone(&b.Start, loc))
	kv.row("to", inZone(&b.End, loc))
	kv.row("progress", fmt.Sprintf("%d of %d submitted: %d succeeded, %d failed, %d unfinished",
		b.Submitted, b.Total, b.Progress.Succeeded, b.Progress.Failed, b.Progress.Unfinished))
	kv.row("parallelism", strconv.Itoa(b.Parallelism))
	kv.row("on failure", b.OnFailure)
	kv.row("priority", orWorkflows(b.Priority))
	kv.row("worker group", orWorkflows(b.WorkerGroup))
	kv.row("params", params(b.Params))
	kv.row("dry run", strconv.FormatBool(b.DryRun))
	kv.row("requested", when(&b.CreatedAt)+" by "+b.RequestedBy)
	kv.row("ended", when(b.EndAt))
	if err := kv.flush(); err != nil {
		return err
	}
	fmt.Fprintln(a.stdout)
	header := []string{"#", "SCHEDULE TIME (UTC)"}
	if loc != nil {
		header = append(header, "IN "+b.Timezone)
	}
	t := newTable(a.stdout, append(header, "INSTANCE", "STATE")...)
	for i, tm := range b.Times {
		row := []string{strconv.Itoa(i + 1), when(&tm)}
		if loc != nil {
			row = append(row, tm.In(loc).Format("2006-01-02 15:04:05 MST"))
		}
		inst, state := "", "not submitted"
		if in, ok := runs[tm.UnixNano()]; ok {
			inst, state = strconv.FormatInt(in.ID, 10), in.State
		} else if i < b.Submitted {
			state = "submitted"
		}
		t.row(append(row, inst, state)...)
	}
	if err := t.flush(); err != nil || len(b.Refused) == 0 {
		return err
	}
	fmt.Fprintln(a.stdout)
	r := newTable(a.stdout, "REFUSED BY THE CALENDAR (UTC)", "OUTCOME", "MOVED TO (UTC)")
	for _, x := range b.Refused {
		moved := "dropped"
		if x.MovedTo != nil {
			moved = when(x.MovedTo)
		}
		r.row(when(&x.Time), x.Outcome, moved)
	}
	return r.flush()
}

// calendarSummary names the calendar a backfill's times were decided
// under and what it did with the cron's times on days off.
func calendarSummary(b api.Backfill) string {
	moved := 0
	for _, r := range b.Refused {
		if r.MovedTo != nil {
			moved++
		}
	}
	return fmt.Sprintf("calendar %s (on_holiday %s): %d cron time(s) moved, %d dropped", b.Calendar, b.OnHoliday, moved, len(b.Refused)-moved)
}

func backfillStopCommand(a *app) *cobra.Command {
	var by string
	c := &cobra.Command{
		Use:   "stop ID",
		Short: "Stop a backfill: submit no more of its times (its runs go on)",
		Long: "Stop a running backfill: no more of its times are submitted. Runs already submitted\n" +
			"go on; stop them with 'beluga instance stop'. A backfill that is not running exits 1.",
		Args: args("ID"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			id, err := parseID("backfill ID", argv[0])
			if err != nil {
				return err
			}
			b, err := a.client().StopBackfill(cmd.Context(), id, by)
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(b)
			}
			msg := fmt.Sprintf("backfill %d stopped: %d of %d time(s) were submitted", b.ID, b.Submitted, b.Total)
			if n := b.Progress.Unfinished; n > 0 {
				msg += fmt.Sprintf("; its %d unfinished run(s) go on", n)
			}
			_, err = fmt.Fprintln(a.stdout, msg)
			return err
		},
	}
	c.Flags().StringVar(&by, "by", defaultBy(), "no longer used: the logged-in user is recorded (kept for old scripts)")
	return c
}

// zoneNamed loads a zone for display; nil for UTC or a zone this machine
// does not know (times are then shown in UTC only).
func zoneNamed(tz string) *time.Location {
	if tz == "" {
		return nil
	}
	loc, err := time.LoadLocation(tz)
	if err != nil {
		return nil
	}
	return loc
}
