package main

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/api/client"
)

// scheduleCommand is `beluga schedule set|show|delete|list|enable|disable|fires|compensate`;
// like the workflow verbs, they work in the project of --project.
func scheduleCommand(a *app) *cobra.Command {
	var project string
	need := needProject(&project)
	g := group("schedule", "Put workflows on a cron schedule",
		scheduleSetCommand(a, need), scheduleShowCommand(a, need), scheduleDeleteCommand(a, need),
		scheduleListCommand(a, &project), scheduleToggleCommand(a, need, true), scheduleToggleCommand(a, need, false),
		scheduleFiresCommand(a, need), scheduleCompensateCommand(a, need))
	g.PersistentFlags().StringVarP(&project, "project", "p", os.Getenv("BELUGA_PROJECT"), "project (env BELUGA_PROJECT)")
	return g
}

func scheduleSetCommand(a *app, need projectFunc) *cobra.Command {
	var (
		req            client.ScheduleRequest
		params         []string
		disabled       bool
		start, endTime string
	)
	c := &cobra.Command{
		Use:   "set NAME --cron EXPR",
		Short: "Create or replace a workflow's cron schedule",
		Long: "Create or replace the cron schedule of workflow NAME. set replaces the whole schedule:\n" +
			"flags left out take their defaults.\n\n" +
			"--cron takes 5 fields (minute hour day-of-month month day-of-week), 6 with leading\n" +
			"seconds, or @yearly, @monthly, @weekly, @daily, @hourly, @every 1h30m. It is read in\n" +
			"--timezone (an IANA name; default UTC). --catchup says what to do with fire times missed\n" +
			"while no master was up: latest (default) runs the newest, all runs each oldest first,\n" +
			"none runs none. --priority, --worker-group and --param apply to the runs it fires,\n" +
			"over the workflow's. --calendar names a business calendar (beluga calendar): a fire due\n" +
			"on one of its days off is skipped, or with --on-holiday moved to the next or previous\n" +
			"business day at the same time (merged into that day's own fire if it has one).",
		Args: args("NAME"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			project, err := need()
			if err != nil {
				return err
			}
			if req.Cron == "" {
				return usagef("--cron EXPR is required, e.g. --cron '0 2 * * *'")
			}
			for _, f := range [][2]string{{"--start", start}, {"--end", endTime}} {
				if _, err := time.Parse(time.RFC3339Nano, f[1]); f[1] != "" && err != nil {
					return usagef("%s %q: use an RFC 3339 time such as 2026-12-01T00:00:00Z or 2026-12-01T02:00:00+08:00", f[0], f[1])
				}
			}
			req.StartTime, req.EndTime = start, endTime
			if req.Params, err = parseParams(params); err != nil {
				return err
			}
			req.Enabled = nil // enabled
			if disabled {
				off := false
				req.Enabled = &off
			}
			s, created, err := a.client().PutSchedule(cmd.Context(), project, argv[0], req)
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(s)
			}
			verb := "replaced"
			if created {
				verb = "created"
			}
			_, err = fmt.Fprintf(a.stdout, "schedule of %s/%s %s; %s\n", s.Project, s.Workflow, verb, nextFire(s))
			return err
		},
	}
	f := c.Flags()
	f.StringVar(&req.Cron, "cron", "", "cron expression, e.g. '0 2 * * *' or @daily")
	f.StringVar(&req.Timezone, "timezone", "", "IANA zone the cron is read in, e.g. Asia/Shanghai (default UTC)")
	f.StringVar(&start, "start", "", "fire no earlier than this RFC 3339 time")
	f.StringVar(&endTime, "end", "", "fire no later than this RFC 3339 time")
	f.StringVar(&req.Catchup, "catchup", "", "missed fire times: latest (default), all or none")
	f.StringVar(&req.Overlap, "overlap", "", "a fire while a run is unfinished: allow (default), skip, wait or replace")
	f.StringVar(&req.Priority, "priority", "", "highest, high, medium, low or lowest (default: the workflow's)")
	f.StringVar(&req.WorkerGroup, "worker-group", "", "worker group (default: the workflow's)")
	f.StringArrayVar(&params, "param", nil, "run param NAME=VALUE (repeatable)")
	f.BoolVar(&disabled, "disabled", false, "store the schedule without firing it")
	f.StringVar(&req.Calendar, "calendar", "", "business calendar the fires follow: the project's of that name, else the shared one")
	f.StringVar(&req.OnHoliday, "on-holiday", "", "a fire due on a day off: skip (default), next_business_day or previous_business_day")
	f.IntVar(&req.PinVersion, "pin-version", 0, "fire this version of the workflow (default: the latest at each fire)")
	f.StringVar(&req.PinCommit, "pin-commit", "", "a Git project's: fire the version a sync made from this commit")
	f.StringVar(&req.By, "by", defaultBy(), "no longer used: the logged-in user is recorded (kept for old scripts)")
	return c
}

func scheduleShowCommand(a *app, need projectFunc) *cobra.Command {
	return &cobra.Command{
		Use:   "show NAME",
		Short: "Show a workflow's schedule and its next fire times",
		Args:  args("NAME"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			project, err := need()
			if err != nil {
				return err
			}
			s, err := a.client().GetSchedule(cmd.Context(), project, argv[0])
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(s)
			}
			return a.printSchedule(s)
		},
	}
}

func (a *app) printSchedule(s api.Schedule) error {
	loc := zoneOf(s)
	kv := newTable(a.stdout, "SCHEDULE", s.Project+"/"+s.Workflow)
	kv.row("cron", s.Cron)
	kv.row("timezone", zoneName(s.Timezone))
	kv.row("enabled", strconv.FormatBool(s.Enabled))
	kv.row("next fire", inZone(s.NextFireTime, loc))
	kv.row("last fire", inZone(s.LastFireTime, loc))
	kv.row("start", inZone(s.StartTime, loc))
	kv.row("end", inZone(s.EndTime, loc))
	kv.row("catchup", s.Catchup)
	kv.row("overlap", s.Overlap)
	if s.PinVersion != 0 {
		kv.row("pinned version", strconv.Itoa(s.PinVersion))
	}
	if s.Calendar != "" {
		onHoliday := s.OnHoliday
		if onHoliday == "" {
			onHoliday = "skip"
		}
		kv.row("calendar", s.Calendar+" (on holiday: "+onHoliday+")")
	}
	if s.SkippedFires > 0 {
		kv.row("skipped fires", strconv.FormatInt(s.SkippedFires, 10)+", last for "+inZone(s.LastSkippedTime, loc))
	}
	kv.row("priority", orWorkflows(s.Priority))
	kv.row("worker group", orWorkflows(s.WorkerGroup))
	kv.row("params", params(s.Params))
	kv.row("note", oneLine(s.Note))
	kv.row("revision", strconv.FormatInt(s.Revision, 10))
	kv.row("updated", when(&s.UpdatedAt)+" by "+s.UpdatedBy)
	if err := kv.flush(); err != nil {
		return err
	}
	if len(s.Upcoming) == 0 {
		return nil
	}
	fmt.Fprintln(a.stdout)
	t := newTable(a.stdout, "UPCOMING (UTC)", "IN "+zoneName(s.Timezone))
	for _, u := range s.Upcoming {
		local := ""
		if loc != nil {
			local = u.In(loc).Format("2006-01-02 15:04:05 MST")
		}
		t.row(when(&u), local)
	}
	return t.flush()
}

func scheduleDeleteCommand(a *app, need projectFunc) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a workflow's schedule (the runs it fired stay)",
		Args:  args("NAME"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			project, err := need()
			if err != nil {
				return err
			}
			if err := a.client().DeleteSchedule(cmd.Context(), project, argv[0]); err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(map[string]any{"project": project, "workflow": argv[0], "deleted": true})
			}
			_, err = fmt.Fprintf(a.stdout, "schedule of %s/%s deleted\n", project, argv[0])
			return err
		},
	}
}

func scheduleListCommand(a *app, project *string) *cobra.Command {
	var pg client.Page
	c := &cobra.Command{
		Use:   "list",
		Short: "List schedules: of --project, or of every project",
		Long: "List schedules: of --project, or of every project. With --limit, --cursor or --prefix (of the\n" +
			"workflow's name), one page by project and workflow: the next page's --cursor is printed after it.",
		Args: args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			l := api.List[api.Schedule]{}
			var err error
			if paged(cmd) {
				l, err = a.client().SchedulesPage(cmd.Context(), *project, pg)
			} else {
				l.Items, err = a.client().ListSchedules(cmd.Context(), *project)
			}
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(l)
			}
			ss := l.Items
			t := newTable(a.stdout, "PROJECT", "WORKFLOW", "CRON", "TIMEZONE", "ENABLED", "NEXT FIRE (UTC)", "LAST FIRE (UTC)")
			for _, s := range ss {
				t.row(s.Project, s.Workflow, s.Cron, zoneName(s.Timezone), strconv.FormatBool(s.Enabled),
					when(s.NextFireTime), when(s.LastFireTime))
			}
			if err := t.flush(); err != nil {
				return err
			}
			return a.printNextCursor(l.NextCursor)
		},
	}
	pageFlags(c, &pg)
	return c
}

// scheduleToggleCommand is enable or disable: read the schedule and put it
// back with only enabled changed.
func scheduleToggleCommand(a *app, need projectFunc, enable bool) *cobra.Command {
	verb, short := "disable", "Stop a workflow's schedule from firing (it is kept)"
	if enable {
		verb, short = "enable", "Let a disabled schedule fire again, from now on"
	}
	var by string
	c := &cobra.Command{
		Use:   verb + " NAME",
		Short: short,
		Args:  args("NAME"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			project, err := need()
			if err != nil {
				return err
			}
			cl := a.client()
			s, err := cl.GetSchedule(cmd.Context(), project, argv[0])
			if err != nil {
				return err
			}
			state := verb + "d"
			if s.Enabled != enable {
				req := s.Request()
				req.Enabled, req.By = &enable, by
				if s, _, err = cl.PutSchedule(cmd.Context(), project, argv[0], req); err != nil {
					return err
				}
			} else {
				state = "already " + state
			}
			if a.json() {
				return a.printJSON(s)
			}
			msg := fmt.Sprintf("schedule of %s/%s %s", s.Project, s.Workflow, state)
			if enable {
				msg += "; " + nextFire(s)
			}
			_, err = fmt.Fprintln(a.stdout, msg)
			return err
		},
	}
	c.Flags().StringVar(&by, "by", defaultBy(), "no longer used: the logged-in user is recorded (kept for old scripts)")
	return c
}

// nextFire says when a schedule fires next, in UTC and in its zone.
func nextFire(s api.Schedule) string {
	switch {
	case !s.Enabled:
		return "disabled, it does not fire"
	case s.NextFireTime == nil:
		return "no fire time left in its window"
	}
	return "next fire " + inZone(s.NextFireTime, zoneOf(s))
}

// zoneOf loads a schedule's zone for display; nil for UTC or when this
// machine does not know it (the times are then shown in UTC only).
func zoneOf(s api.Schedule) *time.Location { return zoneNamed(s.Timezone) }

// inZone formats a time in UTC and, when loc is set, in loc too.
func inZone(t *api.Time, loc *time.Location) string {
	s := when(t)
	if s == "" {
		return ""
	}
	s += " UTC"
	if loc != nil {
		s += " (" + t.In(loc).Format("2006-01-02 15:04:05 MST") + ")"
	}
	return s
}

func zoneName(tz string) string {
	if tz == "" {
		return "UTC"
	}
	return tz
}

func orWorkflows(v string) string {
	if v == "" {
		return "(the workflow's)"
	}
	return v
}
