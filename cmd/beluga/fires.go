package main

import (
	"fmt"
	"net/url"
	"strconv"
	"time"

	"github.com/spf13/cobra"

	"github.com/beluga-scheduler/beluga/api"
)

// scheduleRef resolves the schedule a fires command names: its id, or the
// name of its workflow; it returns the id and the schedule's zone.
func (a *app) scheduleRef(cmd *cobra.Command, project, ref string) (int64, *time.Location, error) {
	if id, err := strconv.ParseInt(ref, 10, 64); err == nil && id > 0 {
		return id, a.scheduleZone(cmd, project, id), nil
	}
	s, err := a.client().GetSchedule(cmd.Context(), project, ref)
	if err != nil {
		return 0, nil, err
	}
	return s.ID, zoneOf(s), nil
}

// scheduleZone finds schedule id's zone among project's schedules (nil:
// UTC, or not found; the times are then shown in UTC only).
func (a *app) scheduleZone(cmd *cobra.Command, project string, id int64) *time.Location {
	ss, err := a.client().ListSchedules(cmd.Context(), project)
	if err != nil {
		return nil
	}
	for _, s := range ss {
		if s.ID == id {
			return zoneOf(s)
		}
	}
	return nil
}

func scheduleFiresCommand(a *app, need projectFunc) *cobra.Command {
	var outcome, from, to, cursor string
	var limit int
	c := &cobra.Command{
		Use:   "fires ID|NAME",
		Short: "List a schedule's ledger of fires: each due time, its outcome and run",
		Long: "List the ledger of fires of a schedule (its id, or its workflow's name), oldest first: each due\n" +
			"time, in UTC and the schedule's zone, and what became of it: fired, skipped_overlap, queued,\n" +
			"replaced, refused_calendar, missed (due while no master fired or the schedule was paused, not\n" +
			"run by its catch-up policy) or compensated, with the run it made. The next page's --cursor is\n" +
			"printed after a page.",
		Args: args("ID|NAME"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			project, err := need()
			if err != nil {
				return err
			}
			id, loc, err := a.scheduleRef(cmd, project, argv[0])
			if err != nil {
				return err
			}
			q := url.Values{}
			for k, v := range map[string]string{"outcome": outcome, "from": from, "to": to, "cursor": cursor} {
				if v != "" {
					q.Set(k, v)
				}
			}
			if limit > 0 {
				q.Set("limit", strconv.Itoa(limit))
			}
			l, err := a.client().ScheduleFires(cmd.Context(), project, id, q)
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(l)
			}
			t := newTable(a.stdout, "DUE (UTC)", "IN ZONE", "OUTCOME", "RUN")
			for _, f := range l.Items {
				run := ""
				if f.InstanceID != nil {
					run = strconv.FormatInt(*f.InstanceID, 10)
				}
				t.row(f.DueTime.UTC().Format(time.RFC3339), inLoc(f.DueTime, loc), f.Outcome, run)
			}
			if err := t.flush(); err != nil {
				return err
			}
			return a.printNextCursor(l.NextCursor)
		},
	}
	f := c.Flags()
	f.StringVar(&outcome, "outcome", "", "only this outcome, e.g. missed")
	f.StringVar(&from, "from", "", "due at or after this RFC 3339 time")
	f.StringVar(&to, "to", "", "due at or before this RFC 3339 time")
	f.StringVar(&cursor, "cursor", "", "the next page's cursor, as printed after a page")
	f.IntVar(&limit, "limit", 0, "at most this many (1 to 1000; default 50)")
	return c
}

func scheduleCompensateCommand(a *app, need projectFunc) *cobra.Command {
	var req api.CompensateRequest
	c := &cobra.Command{
		Use:   "compensate ID|NAME (--all-missed | --fire TIME...) [--dry-run]",
		Short: "Run a schedule's missed fires, once each (--dry-run: list the runs it would make)",
		Long: "Run missed fires of a schedule (its id, or its workflow's name): every one (--all-missed, the\n" +
			"oldest 1,000) or those due at --fire TIME (RFC 3339, repeatable), each once with that schedule\n" +
			"time, as the schedule would have fired it. A fire compensated twice makes one run.\n" +
			"--dry-run lists the runs it would make and makes none.",
		Args: args("ID|NAME"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			project, err := need()
			if err != nil {
				return err
			}
			if req.AllMissed == (len(req.Fires) > 0) {
				return usagef("give --all-missed or --fire TIME (not both)")
			}
			for _, f := range req.Fires {
				if _, err := time.Parse(time.RFC3339Nano, f); err != nil {
					return usagef("--fire %q: use an RFC 3339 time such as 2026-12-01T02:00:00Z", f)
				}
			}
			id, loc, err := a.scheduleRef(cmd, project, argv[0])
			if err != nil {
				return err
			}
			r, err := a.client().CompensateFires(cmd.Context(), project, id, req)
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(r)
			}
			verb := "ran"
			if r.DryRun {
				verb = "would run"
			}
			if _, err := fmt.Fprintf(a.stdout, "schedule %d: %s %d missed fire(s)\n", id, verb, len(r.Runs)); err != nil {
				return err
			}
			if len(r.Runs) == 0 {
				return nil
			}
			t := newTable(a.stdout, "DUE (UTC)", "IN ZONE", "RUN")
			for _, c := range r.Runs {
				run := "-"
				if c.InstanceID != 0 {
					run = strconv.FormatInt(c.InstanceID, 10)
				}
				t.row(c.DueTime.UTC().Format(time.RFC3339), inLoc(c.DueTime, loc), run)
			}
			return t.flush()
		},
	}
	f := c.Flags()
	f.BoolVar(&req.AllMissed, "all-missed", false, "every missed fire of the schedule")
	f.StringArrayVar(&req.Fires, "fire", nil, "the due time of a missed fire (RFC 3339; repeatable)")
	f.BoolVar(&req.DryRun, "dry-run", false, "list the runs it would make; make none")
	return c
}

// inLoc is t on loc's wall clock ("" for UTC).
func inLoc(t time.Time, loc *time.Location) string {
	if loc == nil {
		return ""
	}
	return t.In(loc).Format("2006-01-02 15:04:05 MST")
}
