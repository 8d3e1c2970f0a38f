package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/api/client"
	"github.com/beluga-scheduler/beluga/common/plan"
	"github.com/beluga-scheduler/beluga/common/spec"
)

func workflowCommand(a *app) *cobra.Command {
	var project string
	need := needProject(&project)
	g := group("workflow", "Manage and run workflows",
		applyCommand(a, need), workflowListCommand(a, need), workflowGetCommand(a, need),
		versionsCommand(a, need), workflowDiffCommand(a, need), deleteCommand(a, need), runCommand(a, need), workflowTestCommand(a))
	g.PersistentFlags().StringVarP(&project, "project", "p", os.Getenv("BELUGA_PROJECT"), "project (env BELUGA_PROJECT)")
	return g
}

// projectFunc returns the project a verb works in, or a usage error.
type projectFunc func() (string, error)

// needProject is the projectFunc of a --project flag bound to project.
func needProject(project *string) projectFunc {
	return func() (string, error) {
		if *project == "" {
			return "", usagef("--project is required (or set BELUGA_PROJECT)")
		}
		return *project, nil
	}
}

// parseParams reads repeated --param NAME=VALUE flags; none is nil.
func parseParams(flags []string) (map[string]string, error) {
	return parsePairs("--param", "NAME=VALUE", flags)
}

// parsePairs reads repeated flag K=V flags (form says so in the error);
// none is nil.
func parsePairs(flag, form string, flags []string) (map[string]string, error) {
	var out map[string]string
	for _, p := range flags {
		k, v, ok := strings.Cut(p, "=")
		if !ok || k == "" {
			return nil, usagef("%s %q: use %s", flag, p, form)
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out, nil
}

func applyCommand(a *app, need projectFunc) *cobra.Command {
	var file, name, message string
	c := &cobra.Command{
		Use:   "apply -f FILE [-m MESSAGE]",
		Short: "Create a workflow, or a new version of it, from a YAML or JSON spec",
		Long: "Create a workflow, or a new version of it, from a YAML or JSON spec (-f - reads stdin).\n" +
			"A spec identical to the latest version changes nothing and prints \"unchanged\".",
		Args: args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			project, err := need()
			if err != nil {
				return err
			}
			if file == "" {
				return usagef("-f FILE is required")
			}
			data, err := readSpec(a.stdin, file)
			if err != nil {
				return err
			}
			res, err := a.client().ApplyWorkflowMessage(cmd.Context(), project, name, data, message)
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(res)
			}
			if res.Created {
				_, err = fmt.Fprintf(a.stdout, "workflow %s/%s: created version %d\n", res.Project, res.Name, res.Version)
			} else {
				_, err = fmt.Fprintf(a.stdout, "workflow %s/%s: unchanged (version %d)\n", res.Project, res.Name, res.Version)
			}
			if err == nil && res.GitCommit != "" {
				_, err = fmt.Fprintf(a.stdout, "committed to the project's Git branch as %s\n", res.GitCommit)
			}
			return err
		},
	}
	c.Flags().StringVarP(&file, "file", "f", "", "spec file, or - for stdin")
	c.Flags().StringVar(&name, "name", "", "workflow name when the spec has none")
	c.Flags().StringVarP(&message, "message", "m", "", "the commit message when the project writes back to Git (mode write_back)")
	return c
}

func readSpec(stdin io.Reader, file string) ([]byte, error) {
	var r io.Reader
	if file == "-" {
		r = stdin
	} else {
		f, err := os.Open(file)
		if err != nil {
			return nil, usagef("read spec: %v", err)
		}
		defer f.Close()
		r = f
	}
	// One byte over the limit is enough to know; the server says the rest.
	data, err := io.ReadAll(io.LimitReader(r, spec.MaxSpecBytes+1))
	if err != nil {
		return nil, usagef("read spec %s: %v", file, err)
	}
	if len(data) > spec.MaxSpecBytes {
		return nil, usagef("spec %s is larger than the limit of %d bytes", file, spec.MaxSpecBytes)
	}
	return data, nil
}

func workflowListCommand(a *app, need projectFunc) *cobra.Command {
	var pg client.Page
	c := &cobra.Command{
		Use:   "list",
		Short: "List the workflows of a project (latest versions)",
		Long: "List the workflows of a project (latest versions). With --limit, --cursor or --prefix, one page\n" +
			"by name: the next page's --cursor is printed after it.",
		Args: args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			project, err := need()
			if err != nil {
				return err
			}
			if !paged(cmd) {
				ws, err := a.client().ListWorkflows(cmd.Context(), project)
				if err != nil {
					return err
				}
				return a.printWorkflows(ws, true)
			}
			l, err := a.client().WorkflowsPage(cmd.Context(), project, pg)
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(l)
			}
			if err := a.printWorkflows(l.Items, true); err != nil {
				return err
			}
			return a.printNextCursor(l.NextCursor)
		},
	}
	pageFlags(c, &pg)
	return c
}

// pageFlags are a list command's --limit, --cursor and --prefix.
func pageFlags(c *cobra.Command, pg *client.Page) {
	c.Flags().IntVar(&pg.Limit, "limit", 0, "one page of at most this many (1 to 1000; default 50 when paged)")
	c.Flags().StringVar(&pg.Cursor, "cursor", "", "the page after the one that printed this cursor")
	c.Flags().StringVar(&pg.Prefix, "prefix", "", "only names that start with this")
}

// paged is whether a list command was asked for a page.
func paged(c *cobra.Command) bool {
	return c.Flags().Changed("limit") || c.Flags().Changed("cursor") || c.Flags().Changed("prefix")
}

// printNextCursor says how to ask for the next page, if one follows.
func (a *app) printNextCursor(next string) error {
	if next == "" {
		return nil
	}
	_, err := fmt.Fprintf(a.stdout, "next page: --cursor %s\n", next)
	return err
}

func (a *app) printWorkflows(ws []api.Workflow, withName bool) error {
	if a.json() {
		return a.printJSON(api.List[api.Workflow]{Items: ws})
	}
	header := []string{"VERSION", "CREATED", "SPEC HASH"}
	if withName {
		header = append([]string{"NAME"}, header...)
	}
	t := newTable(a.stdout, header...)
	for _, w := range ws {
		cells := []string{strconv.Itoa(w.Version), when(&w.CreatedAt), shortHash(w.SpecHash)}
		if withName {
			cells = append([]string{w.Name}, cells...)
		}
		t.row(cells...)
	}
	return t.flush()
}

func workflowGetCommand(a *app, need projectFunc) *cobra.Command {
	var version int
	c := &cobra.Command{
		Use:   "get NAME",
		Short: "Show a workflow's spec (latest version, or --version N)",
		Args:  args("NAME"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			project, err := need()
			if err != nil {
				return err
			}
			if version < 0 {
				return usagef("--version must be positive")
			}
			w, err := a.client().GetWorkflow(cmd.Context(), project, argv[0], version)
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(w)
			}
			out, err := specYAML(w.Spec)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(a.stdout, "# workflow %s/%s version %d, created %s, spec hash %s\n%s",
				w.Project, w.Name, w.Version, when(&w.CreatedAt), w.SpecHash, out)
			return err
		},
	}
	c.Flags().IntVar(&version, "version", 0, "version to show (default: the latest)")
	return c
}

// specYAML renders a stored (canonical JSON) spec as YAML that can be
// applied again, fields in spec order.
func specYAML(raw json.RawMessage) ([]byte, error) {
	var w spec.Workflow
	if err := json.Unmarshal(raw, &w); err != nil {
		return nil, fmt.Errorf("decode the stored spec: %w", err)
	}
	var buf bytes.Buffer
	enc := yaml.NewEncoder(&buf)
	enc.SetIndent(2)
	if err := enc.Encode(&w); err != nil {
		return nil, fmt.Errorf("render the spec: %w", err)
	}
	return buf.Bytes(), enc.Close()
}

func versionsCommand(a *app, need projectFunc) *cobra.Command {
	return &cobra.Command{
		Use:   "versions NAME",
		Short: "List every version of a workflow, newest first",
		Args:  args("NAME"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			project, err := need()
			if err != nil {
				return err
			}
			ws, err := a.client().Versions(cmd.Context(), project, argv[0])
			if err != nil {
				return err
			}
			return a.printWorkflows(ws, false)
		},
	}
}

func deleteCommand(a *app, need projectFunc) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete every version of a workflow (refused while runs are unfinished)",
		Args:  args("NAME"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			project, err := need()
			if err != nil {
				return err
			}
			if err := a.client().DeleteWorkflow(cmd.Context(), project, argv[0]); err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(map[string]any{"project": project, "name": argv[0], "deleted": true})
			}
			_, err = fmt.Fprintf(a.stdout, "workflow %s/%s deleted\n", project, argv[0])
			return err
		},
	}
}

func runCommand(a *app, need projectFunc) *cobra.Command {
	var (
		params     []string
		opts       client.RunOptions
		wait       bool
		asPlan     bool
		downstream string
	)
	c := &cobra.Command{
		Use:   "run NAME",
		Short: "Start a run of a workflow; --wait follows it to the end",
		Long: "Start a run of a workflow. With --wait, print each task's state changes as they\n" +
			"happen and the final state; the exit code is 0 only when the run succeeded.",
		Args: args("NAME"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			project, err := need()
			if err != nil {
				return err
			}
			if opts.Version < 0 {
				return usagef("--version must be positive")
			}
			if opts.Params, err = parseParams(params); err != nil {
				return err
			}
			c := a.client()
			if asPlan {
				if wait {
					return usagef("--plan runs nothing: drop --wait (then: beluga plan apply ID)")
				}
				if len(opts.StartNodes) == 0 {
					return usagef("--plan plans a rerun from tasks: give --start-node (and --scope downstream)")
				}
				if _, err := plan.ParseDownstream(downstream); err != nil {
					return usagef("--downstream: %v", err)
				}
				p, err := c.RunPlan(cmd.Context(), project, argv[0], opts, downstream)
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
			inst, err := c.Run(cmd.Context(), project, argv[0], opts)
			if err != nil {
				return err
			}
			if !wait {
				if a.json() {
					return a.printJSON(inst)
				}
				_, err := fmt.Fprintf(a.stdout, "instance %d submitted (%s/%s version %d)\n", inst.ID, inst.Project, inst.Workflow, inst.Version)
				return err
			}
			if !a.json() {
				fmt.Fprintf(a.stdout, "instance %d submitted (%s/%s version %d)\n", inst.ID, inst.Project, inst.Workflow, inst.Version)
			}
			return a.follow(cmd.Context(), c, inst.ID)
		},
	}
	c.Flags().StringArrayVar(&params, "param", nil, "run param NAME=VALUE (repeatable)")
	c.Flags().StringSliceVar(&opts.SecretParams, "secret", nil, "mark the --param NAME as secret: stored sealed, shown as *** (repeatable)")
	c.Flags().IntVar(&opts.Version, "version", 0, "version to run (default: the latest)")
	c.Flags().StringVar(&opts.Priority, "priority", "", "highest, high, medium, low or lowest (default: the workflow's)")
	c.Flags().StringVar(&opts.WorkerGroup, "worker-group", "", "worker group (default: the workflow's)")
	c.Flags().BoolVar(&wait, "wait", false, "follow the run and exit 0 only if it succeeds")
	c.Flags().StringSliceVar(&opts.StartNodes, "start-node", nil, "run only from these tasks (repeatable or comma-separated)")
	c.Flags().StringVar(&opts.Scope, "scope", "", "with --start-node: only (default), upstream or downstream")
	c.Flags().BoolVar(&opts.DryRun, "dry-run", false, "record every task as succeeded without running it")
	c.Flags().BoolVar(&asPlan, "plan", false, "with --start-node: print what the run from them would run (downstream runs, waits, estimates, conflicts) and keep it as a plan; run nothing")
	c.Flags().StringVar(&downstream, "downstream", "", "with --plan: follow workflows that depend on the run: none (default), direct or all")
	return c
}
