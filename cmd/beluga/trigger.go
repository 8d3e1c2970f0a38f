package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/beluga-scheduler/beluga/api"
)

// triggerCommand is `beluga trigger`: a workflow's webhook triggers and
// their deliveries (README, "Webhook triggers").
func triggerCommand(a *app) *cobra.Command {
	var project, workflow string
	need := func() (string, string, error) {
		p, err := needProject(&project)()
		if err != nil {
			return "", "", err
		}
		if workflow == "" {
			return "", "", usagef("--workflow is required")
		}
		return p, workflow, nil
	}
	printNew := func(t api.NewTrigger, verb string) error {
		if a.json() {
			return a.printJSON(t)
		}
		_, err := fmt.Fprintf(a.stdout, "trigger %s of %s %s; deliver to POST %s with\n  Authorization: Bearer %s\n"+
			"(the token is shown only now)\n", t.Name, t.Workflow, verb, t.HookPath, t.Token)
		return err
	}

	var paths []string
	var disabled bool
	create := &cobra.Command{
		Use:   "create NAME --workflow W [--map PARAM=PATH]... [--disabled]",
		Short: "Make a webhook trigger of a workflow (edit) and print its token, once",
		Long: "Make a webhook trigger: each POST of JSON to its hook path carrying its token starts a run of\n" +
			"the workflow, its params read from the JSON by --map PARAM=PATH (a gjson path, e.g.\n" +
			"head_commit.id); an Idempotency-Key header makes a retried delivery start one run.",
		Args: args("NAME"),
		RunE: func(cmd *cobra.Command, as []string) error {
			p, w, err := need()
			if err != nil {
				return err
			}
			m, err := parsePairs("--map", "PARAM=PATH", paths)
			if err != nil {
				return err
			}
			on := !disabled
			t, err := a.client().CreateTrigger(cmd.Context(), p, w, api.TriggerRequest{Name: as[0], Params: m, Enabled: &on})
			if err != nil {
				return err
			}
			return printNew(t, "created")
		},
	}
	create.Flags().StringArrayVar(&paths, "map", nil, "run param PARAM from the delivery's JSON at PATH (repeatable)")
	create.Flags().BoolVar(&disabled, "disabled", false, "create it disabled (deliveries are refused until enabled)")

	list := &cobra.Command{
		Use:   "list --workflow W",
		Short: "List a workflow's triggers (never their tokens)",
		Args:  args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, w, err := need()
			if err != nil {
				return err
			}
			ts, err := a.client().ListTriggers(cmd.Context(), p, w)
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(ts)
			}
			t := newTable(a.stdout, "NAME", "ENABLED", "HOOK", "PARAMS", "CREATED BY")
			for _, tr := range ts {
				t.row(tr.Name, fmt.Sprint(tr.Enabled), tr.HookPath, mapText(tr.Params), tr.CreatedBy)
			}
			return t.flush()
		},
	}

	setEnabled := func(use, short string, on bool) *cobra.Command {
		return &cobra.Command{
			Use:   use + " NAME --workflow W",
			Short: short,
			Args:  args("NAME"),
			RunE: func(cmd *cobra.Command, as []string) error {
				p, w, err := need()
				if err != nil {
					return err
				}
				t, err := a.client().UpdateTrigger(cmd.Context(), p, w, as[0], api.TriggerUpdateRequest{Enabled: &on})
				if err != nil {
					return err
				}
				if a.json() {
					return a.printJSON(t)
				}
				_, err = fmt.Fprintf(a.stdout, "trigger %s of %s %sd\n", t.Name, t.Workflow, use)
				return err
			},
		}
	}

	rotate := &cobra.Command{
		Use:   "rotate NAME --workflow W",
		Short: "Give a trigger a new token (printed once); the old one is refused from now on",
		Args:  args("NAME"),
		RunE: func(cmd *cobra.Command, as []string) error {
			p, w, err := need()
			if err != nil {
				return err
			}
			t, err := a.client().RotateTrigger(cmd.Context(), p, w, as[0])
			if err != nil {
				return err
			}
			return printNew(t, "rotated")
		},
	}

	del := &cobra.Command{
		Use:   "delete NAME --workflow W",
		Short: "Delete a trigger and its deliveries (the runs it started stay)",
		Args:  args("NAME"),
		RunE: func(cmd *cobra.Command, as []string) error {
			p, w, err := need()
			if err != nil {
				return err
			}
			if err := a.client().DeleteTrigger(cmd.Context(), p, w, as[0]); err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(map[string]any{"trigger": as[0], "deleted": true})
			}
			_, err = fmt.Fprintf(a.stdout, "trigger %s of %s deleted\n", as[0], w)
			return err
		},
	}

	var limit int
	var before int64
	deliveries := &cobra.Command{
		Use:   "deliveries NAME --workflow W [--limit N] [--before ID]",
		Short: "A trigger's deliveries, newest first: accepted (its run), duplicate (the run of its key) or refused (why)",
		Args:  args("NAME"),
		RunE: func(cmd *cobra.Command, as []string) error {
			p, w, err := need()
			if err != nil {
				return err
			}
			if limit < 1 || limit > 1000 {
				return usagef("--limit must be 1 to 1000, got %d", limit)
			}
			ds, err := a.client().TriggerDeliveries(cmd.Context(), p, w, as[0], limit, before)
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(ds)
			}
			t := newTable(a.stdout, "ID", "RECEIVED", "KEY", "OUTCOME", "RUN", "REASON")
			for _, d := range ds {
				run := ""
				if d.RunID != 0 {
					run = fmt.Sprint(d.RunID)
				}
				t.row(fmt.Sprint(d.ID), when(&d.ReceivedAt), d.IdempotencyKey, d.Outcome, run, d.Reason)
			}
			return t.flush()
		},
	}
	deliveries.Flags().IntVar(&limit, "limit", 50, "at most this many (1 to 1000)")
	deliveries.Flags().Int64Var(&before, "before", 0, "only deliveries with a smaller id (the next page)")

	g := group("trigger", "A workflow's webhook triggers: create, list, enable, disable, rotate, delete, deliveries",
		create, list, setEnabled("enable", "Enable a trigger: its deliveries start runs again", true),
		setEnabled("disable", "Disable a trigger: its deliveries are refused (and recorded)", false), rotate, del, deliveries)
	g.PersistentFlags().StringVarP(&project, "project", "p", os.Getenv("BELUGA_PROJECT"), "project (env BELUGA_PROJECT)")
	g.PersistentFlags().StringVarP(&workflow, "workflow", "w", "", "the workflow the trigger belongs to")
	return g
}

func mapText(m map[string]string) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, k+"="+m[k])
	}
	return strings.Join(parts, " ")
}
