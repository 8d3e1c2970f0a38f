package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/beluga-scheduler/beluga/api/client"
	"github.com/beluga-scheduler/beluga/common/plan"
)

// withPlan gives an instance action that starts work (rerun,
// recover_failed) its plan form: --plan prints what would run and keeps the
// plan for `beluga plan apply`, sending no action.
func withPlan(a *app, c *cobra.Command, action string) *cobra.Command {
	var asPlan bool
	var downstream string
	c.Flags().BoolVar(&asPlan, "plan", false, "print what would run (downstream runs, waits, estimates, conflicts) and keep it as a plan; run nothing")
	c.Flags().StringVar(&downstream, "downstream", "", "with --plan: follow workflows that depend on this run: none (default), direct or all")
	run := c.RunE
	c.RunE = func(cmd *cobra.Command, argv []string) error {
		if !asPlan {
			if downstream != "" {
				return usagef("--downstream needs --plan (then: beluga plan apply ID)")
			}
			return run(cmd, argv)
		}
		for _, f := range []string{"latest", "version"} {
			if fl := cmd.Flags().Lookup(f); fl != nil && fl.Changed {
				return usagef("--plan runs the instance's own version: drop --%s, or run without --plan", f)
			}
		}
		id, err := parseID("instance ID", argv[0])
		if err != nil {
			return err
		}
		if _, err := plan.ParseDownstream(downstream); err != nil {
			return usagef("--downstream: %v", err)
		}
		p, err := a.client().InstancePlan(cmd.Context(), id, action, downstream)
		if err != nil {
			return err
		}
		if a.json() {
			return a.printJSON(p)
		}
		return printPlan(a.stdout, p)
	}
	return c
}

// planCommand is `beluga plan show|apply ID`.
func planCommand(a *app) *cobra.Command {
	show := planIDCommand(a, "show", "Show a plan: what it runs, waits on, takes, and its conflicts",
		(*client.Client).GetPlan, printPlan)
	apply := planIDCommand(a, "apply", "Run exactly a plan's set; refused (exit 1, naming what) if the world changed since it was made",
		(*client.Client).ApplyPlan, func(w io.Writer, p client.Plan) error {
			cmds := make([]string, len(p.Commands))
			for i, c := range p.Commands {
				cmds[i] = strconv.FormatInt(c, 10)
			}
			reopened := 0
			for _, in := range p.Instances {
				if !in.New {
					reopened++
				}
			}
			if _, err := fmt.Fprintf(w, "plan %d applied: %d instance(s) requested (commands %s)\n", p.ID, reopened, strings.Join(cmds, ", ")); err != nil {
				return err
			}
			for _, id := range p.Started {
				if _, err := fmt.Fprintf(w, "instance %d submitted\n", id); err != nil {
					return err
				}
			}
			if p.BackfillID != 0 {
				if _, err := fmt.Fprintf(w, "backfill %d started\n", p.BackfillID); err != nil {
					return err
				}
			}
			if p.EventID != 0 {
				if _, err := fmt.Fprintf(w, "dataset event %d posted: the leader runs what the plan listed\n", p.EventID); err != nil {
					return err
				}
			}
			return nil
		})
	return group("plan", "Impact plans: what a rerun, recover-failed, rerun from tasks, backfill or dataset event would run (--plan on those commands)", show, apply)
}

// planIDCommand is `beluga plan USE ID`: call with the plan's id, print
// the answer (or its JSON).
func planIDCommand(a *app, use, short string, call func(*client.Client, context.Context, int64) (client.Plan, error),
	print func(io.Writer, client.Plan) error) *cobra.Command {
	return &cobra.Command{
		Use:   use + " ID",
		Short: short,
		Args:  args("ID"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			id, err := parseID("plan ID", argv[0])
			if err != nil {
				return err
			}
			p, err := call(a.client(), cmd.Context(), id)
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(p)
			}
			return print(a.stdout, p)
		},
	}
}

func secs(e plan.Estimate) string {
	return fmt.Sprintf("%s / %s", roundDuration(e.P50), roundDuration(e.P90))
}

// printPlan writes p for a person: its runs, their waits, its conflicts.
func printPlan(w io.Writer, p client.Plan) error {
	what := fmt.Sprintf("instance %d", p.InstanceID)
	if st := p.Start; st != nil {
		what = fmt.Sprintf("%s/%s version %d", st.Project, st.Workflow, st.Version)
		if len(st.Times) > 0 {
			what += fmt.Sprintf(", %d time(s) %s to %s, %d at a time", len(st.Times), st.Times[0].Format(time.RFC3339),
				st.Times[len(st.Times)-1].Format(time.RFC3339), max(st.Parallelism, 1))
		} else {
			what += " from " + strings.Join(st.StartNodes, ",")
		}
	}
	fmt.Fprintf(w, "plan %d: %s of %s, downstream %s; expires %s\n", p.ID, p.Action, what, p.Downstream,
		p.ExpiresAt.Format(time.RFC3339))
	fmt.Fprintln(w, "(a negative INSTANCE is a new run the plan starts)")
	fmt.Fprintln(w)
	t := newTable(w, "INSTANCE", "LEVEL", "PROJECT", "WORKFLOW", "ACTION", "TIME", "TASKS", "AFTER", "EST (P50 / P90)")
	for _, in := range p.Instances {
		after := make([]string, len(in.After))
		for i, id := range in.After {
			after[i] = strconv.FormatInt(id, 10)
		}
		at := "-"
		if in.ScheduleTime != nil {
			at = in.ScheduleTime.UTC().Format(time.RFC3339)
		}
		t.row(strconv.FormatInt(in.ID, 10), strconv.Itoa(in.Level), in.Project, in.Workflow, string(in.Action), at,
			strconv.Itoa(len(in.Tasks)), strings.Join(after, ","), secs(in.Estimate))
	}
	if err := t.flush(); err != nil {
		return err
	}
	var waits []string
	for _, in := range p.Instances {
		for _, wt := range in.Waits {
			waits = append(waits, fmt.Sprintf("  instance %d: %s", in.ID, wt))
		}
		for _, task := range in.Tasks {
			for _, wt := range task.Waits {
				waits = append(waits, fmt.Sprintf("  instance %d task %s: %s", in.ID, task.Name, wt))
			}
		}
	}
	if len(waits) > 0 {
		fmt.Fprintf(w, "\nwaits:\n%s\n", strings.Join(waits, "\n"))
	}
	if len(p.Conflicts) > 0 {
		fmt.Fprintln(w, "\nconflicts:")
		for _, c := range p.Conflicts {
			tag := "note"
			if c.Blocking {
				tag = "BLOCKING"
			}
			fmt.Fprintf(w, "  [%s] %s\n", tag, c.What)
		}
	}
	fmt.Fprintf(w, "\nestimate: %s (p50 / p90)\n", secs(p.Estimate))
	if p.AppliedAt != nil {
		_, err := fmt.Fprintf(w, "applied %s by %s\n", p.AppliedAt.Format(time.RFC3339), p.AppliedBy)
		return err
	}
	if p.Blocked {
		_, err := fmt.Fprintln(w, "blocked: a blocking conflict keeps it from being applied")
		return err
	}
	_, err := fmt.Fprintf(w, "apply: beluga plan apply %d\n", p.ID)
	return err
}
