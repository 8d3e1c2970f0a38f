package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/specdiff"
)

func workflowDiffCommand(a *app, need projectFunc) *cobra.Command {
	return &cobra.Command{
		Use:   "diff NAME FROM [TO]",
		Short: "Show what changed from one version of a workflow to another (TO: latest by default)",
		Long: "Show what changed from version FROM to version TO (each a number or latest; TO defaults to latest):\n" +
			"the workflow's fields, the tasks added, removed and changed (field by field), the dependencies\n" +
			"added and removed, then the unified diff of the two specs as YAML (secret values masked).",
		Args: cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, argv []string) error {
			project, err := need()
			if err != nil {
				return err
			}
			to := "latest"
			if len(argv) == 3 {
				to = argv[2]
			}
			for _, v := range []string{argv[1], to} {
				if n, err := parseVersionArg(v); err != nil || n == 0 {
					return usagef("version %q: use a version number or latest", v)
				}
			}
			d, err := a.client().Diff(cmd.Context(), project, argv[0], argv[1], to)
			if err != nil {
				return err
			}
			return a.printDiff(d)
		},
	}
}

func instanceDiffCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "diff ID",
		Short: "Show what differs between the version an instance runs and its workflow's latest",
		Args:  args("ID"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			id, err := parseID("instance ID", argv[0])
			if err != nil {
				return err
			}
			d, err := a.client().InstanceDiff(cmd.Context(), id)
			if err != nil {
				return err
			}
			return a.printDiff(d)
		},
	}
}

// parseVersionArg reads a version number or latest (model.VersionLatest).
func parseVersionArg(s string) (int, error) {
	var v api.VersionChoice
	if err := v.UnmarshalJSON([]byte(fmt.Sprintf("%q", s))); err != nil {
		return 0, err
	}
	return int(v), nil
}

func (a *app) printDiff(d api.VersionDiff) error {
	if a.json() {
		return a.printJSON(d)
	}
	side := func(r api.VersionRef) string {
		s := fmt.Sprintf("v%d", r.Version)
		if r.GitCommit != "" {
			s += " (commit " + r.GitCommit[:min(12, len(r.GitCommit))] + ")"
		}
		return s
	}
	w := &strings.Builder{}
	fmt.Fprintf(w, "%s/%s: %s -> %s\n", d.Project, d.Workflow, side(d.From), side(d.To))
	if d.Same {
		fmt.Fprintln(w, "no differences")
		_, err := fmt.Fprint(a.stdout, w.String())
		return err
	}
	writeDiffBody(w, d.Diff)
	_, err := fmt.Fprint(a.stdout, w.String())
	return err
}

// writeDiffBody writes d's changes, then its text diff.
func writeDiffBody(w *strings.Builder, d specdiff.Diff) {
	for _, c := range d.WorkflowFields {
		fmt.Fprintf(w, "~ workflow %s: %s -> %s\n", c.Field, jsonOrNone(c.From), jsonOrNone(c.To))
	}
	for _, n := range d.TasksAdded {
		fmt.Fprintf(w, "+ task %s\n", n)
	}
	for _, n := range d.TasksRemoved {
		fmt.Fprintf(w, "- task %s\n", n)
	}
	for _, t := range d.TasksChanged {
		for _, c := range t.Changes {
			fmt.Fprintf(w, "~ task %s %s: %s -> %s\n", t.Name, c.Field, jsonOrNone(c.From), jsonOrNone(c.To))
		}
	}
	for _, e := range d.EdgesAdded {
		fmt.Fprintf(w, "+ edge %s -> %s\n", e.From, e.To)
	}
	for _, e := range d.EdgesRemoved {
		fmt.Fprintf(w, "- edge %s -> %s\n", e.From, e.To)
	}
	if d.Text != "" {
		fmt.Fprintf(w, "\n%s", d.Text)
	} else if d.TextOmitted != "" {
		fmt.Fprintf(w, "\n(text diff omitted: %s)\n", d.TextOmitted)
	}
}

func jsonOrNone(v []byte) string {
	if len(v) == 0 {
		return "(none)"
	}
	return string(v)
}

// versionFlags adds --latest and --version N to a rerun or recover-failed
// command; the returned func is the choice (0: the instance's own).
func versionFlags(c *cobra.Command) func() (api.VersionChoice, error) {
	var latest bool
	var version int
	c.Flags().BoolVar(&latest, "latest", false, "run the workflow's latest version instead of the instance's own")
	c.Flags().IntVar(&version, "version", 0, "run this version of the workflow instead of the instance's own")
	return func() (api.VersionChoice, error) {
		switch {
		case latest && version != 0:
			return 0, usagef("give --latest or --version, not both")
		case latest:
			return api.VersionChoice(model.VersionLatest), nil
		case version < 0 || c.Flags().Changed("version") && version == 0:
			return 0, usagef("--version %d: use a version number from 1", version)
		}
		return api.VersionChoice(version), nil
	}
}

// versionLine is an instance's version as shown: its commit, and how it
// stands to the latest.
func versionLine(d api.InstanceDetail) string {
	s := fmt.Sprintf("%s/%s version %d", d.Project, d.Workflow, d.Version)
	if d.GitCommit != "" {
		s += " (commit " + d.GitCommit[:min(12, len(d.GitCommit))] + ")"
	}
	if d.LatestVersion != 0 && d.LatestVersion != d.Version {
		s += fmt.Sprintf("; latest is %d (beluga instance diff %d)", d.LatestVersion, d.ID)
	}
	return s
}
