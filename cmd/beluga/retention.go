package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/beluga-scheduler/beluga/api"
)

// retentionCommand is `beluga retention show|set|plan|purge`: the global
// default without --project, a project's own policy with it.
func retentionCommand(a *app) *cobra.Command {
	var project string
	show := &cobra.Command{
		Use:   "show [--project P]",
		Short: "Show the global retention default, or a project's own policy and the one in force",
		Args:  args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if project == "" {
				d, err := a.client().RetentionDefault(cmd.Context())
				if err != nil {
					return err
				}
				return printRetentionDefault(a, d)
			}
			p, err := a.client().ProjectRetention(cmd.Context(), project)
			if err != nil {
				return err
			}
			return printProjectRetention(a, p)
		},
	}

	var keepDays, keepRuns, auditDays string
	set := &cobra.Command{
		Use:   "set [--project P] [--keep-days N] [--keep-runs N] [--audit-days N]",
		Short: "Set the global default (admins), or a project's own policy (its editors; \"default\" takes the global one)",
		Args:  args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			f := cmd.Flags()
			if !f.Changed("keep-days") && !f.Changed("keep-runs") && !f.Changed("audit-days") {
				return usagef("give --keep-days, --keep-runs or --audit-days")
			}
			if project == "" {
				var req api.RetentionDefaultRequest
				var err error
				for _, x := range []struct {
					flag, v string
					to      **int
				}{{"keep-days", keepDays, &req.KeepDays}, {"keep-runs", keepRuns, &req.KeepRuns}, {"audit-days", auditDays, &req.AuditDays}} {
					if f.Changed(x.flag) {
						if *x.to, err = retentionValue(x.flag, x.v, false); err != nil {
							return err
						}
					}
				}
				d, err := a.client().SetRetentionDefault(cmd.Context(), req)
				if err != nil {
					return err
				}
				return printRetentionDefault(a, d)
			}
			if f.Changed("audit-days") {
				return usagef("--audit-days is global: give it without --project")
			}
			// A flag left out keeps the project's current value.
			cur, err := a.client().ProjectRetention(cmd.Context(), project)
			if err != nil {
				return err
			}
			req := api.ProjectRetentionRequest{KeepDays: cur.KeepDays, KeepRuns: cur.KeepRuns}
			if f.Changed("keep-days") {
				if req.KeepDays, err = retentionValue("keep-days", keepDays, true); err != nil {
					return err
				}
			}
			if f.Changed("keep-runs") {
				if req.KeepRuns, err = retentionValue("keep-runs", keepRuns, true); err != nil {
					return err
				}
			}
			p, err := a.client().SetProjectRetention(cmd.Context(), project, req)
			if err != nil {
				return err
			}
			return printProjectRetention(a, p)
		},
	}
	set.Flags().StringVar(&keepDays, "keep-days", "", "days a finished run is kept after its end (0: no limit; with --project, \"default\": the global one)")
	set.Flags().StringVar(&keepRuns, "keep-runs", "", "newest runs of each workflow kept (0: no limit; with --project, \"default\": the global one)")
	set.Flags().StringVar(&auditDays, "audit-days", "", "days audit rows are kept (global only; 0: forever)")

	var projects []string
	var noAudit bool
	run := func(purge bool) func(cmd *cobra.Command, _ []string) error {
		return func(cmd *cobra.Command, _ []string) error {
			if project != "" {
				p, err := a.client().RetentionProject(cmd.Context(), project, purge)
				if err != nil {
					return err
				}
				if a.json() {
					return a.printJSON(p)
				}
				return printRetentionRun(a.stdout, purge, api.RetentionRun{Projects: []api.RetentionPlan{p}, Bytes: p.Bytes})
			}
			audit := !noAudit
			r, err := a.client().RetentionAll(cmd.Context(), api.RetentionRunRequest{Projects: projects, Audit: &audit}, purge)
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(r)
			}
			return printRetentionRun(a.stdout, purge, r)
		}
	}
	plan := &cobra.Command{
		Use:   "plan [--project P]",
		Short: "Dry run: list the runs, task rows, events, history, audit rows and bytes a purge would delete",
		Args:  args(),
		RunE:  run(false),
	}
	purge := &cobra.Command{
		Use:   "purge [--project P]",
		Short: "Delete what plan lists, in bounded transactions (a project's editors; every project and the audit log: admins)",
		Args:  args(),
		RunE:  run(true),
	}
	for _, c := range []*cobra.Command{plan, purge} {
		c.Flags().StringSliceVar(&projects, "projects", nil, "without --project: only these projects (admins)")
		c.Flags().BoolVar(&noAudit, "no-audit", false, "without --project: leave the audit log alone")
	}
	g := group("retention", "Keep runs, task rows, events and audit for N days or N runs; dry-run and purge the rest",
		show, set, plan, purge)
	g.PersistentFlags().StringVarP(&project, "project", "p", "", "a project's policy (none: the global default)")
	return g
}

// retentionValue parses a flag's value: a whole number (the server checks
// its range), or "default" where inherit allows it (nil).
func retentionValue(flag, v string, inherit bool) (*int, error) {
	if inherit && v == "default" {
		return nil, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		if inherit {
			return nil, usagef("--%s must be a whole number or \"default\", got %q", flag, v)
		}
		return nil, usagef("--%s must be a whole number, got %q", flag, v)
	}
	return &n, nil
}

func printRetentionDefault(a *app, d api.RetentionDefault) error {
	if a.json() {
		return a.printJSON(d)
	}
	_, err := fmt.Fprintf(a.stdout, "global default: keep_days %s, keep_runs %s; audit_days %s\n",
		limit(d.KeepDays), limit(d.KeepRuns), limit(d.AuditDays))
	return err
}

func printProjectRetention(a *app, p api.ProjectRetention) error {
	if a.json() {
		return a.printJSON(p)
	}
	own := func(v *int) string {
		if v == nil {
			return "default"
		}
		return limit(*v)
	}
	_, err := fmt.Fprintf(a.stdout, "project %s: keep_days %s, keep_runs %s; in force: keep_days %s, keep_runs %s\n",
		p.Project, own(p.KeepDays), own(p.KeepRuns), limit(p.Effective.KeepDays), limit(p.Effective.KeepRuns))
	return err
}

func limit(n int) string {
	if n == 0 {
		return "none"
	}
	return strconv.Itoa(n)
}

func printRetentionRun(w io.Writer, purged bool, r api.RetentionRun) error {
	t := newTable(w, "PROJECT", "KEEP DAYS", "KEEP RUNS", "RUNS", "TASK ROWS", "EVENTS", "HISTORY", "LOG FILES", "LOG BYTES", "BYTES", "SKIPPED")
	for _, p := range r.Projects {
		t.row(p.Project, limit(p.Policy.KeepDays), limit(p.Policy.KeepRuns), strconv.Itoa(len(p.Instances)),
			strconv.FormatInt(p.TaskRows, 10), strconv.FormatInt(p.EventRows, 10), strconv.FormatInt(p.HistoryRows, 10),
			strconv.FormatInt(p.LogFiles, 10), strconv.FormatInt(p.LogBytes, 10), strconv.FormatInt(p.Bytes, 10), strconv.Itoa(len(p.Skipped)))
	}
	if err := t.flush(); err != nil {
		return err
	}
	verb := "would free"
	if purged {
		verb = "freed"
	}
	var b strings.Builder
	for _, p := range r.Projects {
		if len(p.Instances) > 0 {
			fmt.Fprintf(&b, "%s runs: %s\n", p.Project, idList(p.Instances, 50))
		}
		for _, why := range slices.Sorted(maps.Keys(p.Kept)) {
			fmt.Fprintf(&b, "%s kept %d run(s): %s\n", p.Project, p.Kept[why], why)
		}
	}
	if r.Audit != nil {
		fmt.Fprintf(&b, "audit rows (audit_days %s): %d\n", limit(r.Audit.Days), r.Audit.Rows)
	}
	fmt.Fprintf(&b, "%s about %d bytes of database rows (task log files stay on the workers)\n", verb, r.Bytes)
	_, err := io.WriteString(w, b.String())
	return err
}

// idList is ids joined, the first most of them and a count of the rest.
func idList(ids []int64, most int) string {
	parts := make([]string, 0, min(len(ids), most))
	for _, id := range ids[:min(len(ids), most)] {
		parts = append(parts, strconv.FormatInt(id, 10))
	}
	s := strings.Join(parts, " ")
	if len(ids) > most {
		s += fmt.Sprintf(" ... and %d more", len(ids)-most)
	}
	return s
}
