package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/beluga-scheduler/beluga/api"
)

// promoteCommand is `beluga promote SRC_PROJECT/WORKFLOW TARGET_PROJECT`:
// a change request for a reviewer (README, "Promotion with review").
func promoteCommand(a *app) *cobra.Command {
	var req api.PromoteRequest
	c := &cobra.Command{
		Use:   "promote SRC_PROJECT/WORKFLOW TARGET_PROJECT [-m MESSAGE] [--version N]",
		Short: "Ask to promote a workflow's version into another project: a change request for a reviewer",
		Long: "Make a change request proposing version --version (default: the latest) of WORKFLOW in SRC_PROJECT\n" +
			"for TARGET_PROJECT, and print its diff against the target's current version. A user with approve on\n" +
			"the target (never the author) approves it (applying it) or rejects it: see `beluga promotion`.",
		Args: args("SRC_PROJECT/WORKFLOW", "TARGET_PROJECT"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			src, wf, ok := strings.Cut(argv[0], "/")
			if !ok || src == "" || wf == "" || strings.Contains(wf, "/") {
				return usagef("source %q: use SRC_PROJECT/WORKFLOW, e.g. dev/nightly_etl", argv[0])
			}
			if req.Version < 0 {
				return usagef("--version %d: use a version number (or leave it out for the latest)", req.Version)
			}
			req.SourceProject, req.Workflow = src, wf
			cr, err := a.client().Promote(cmd.Context(), argv[1], req)
			if err != nil {
				return err
			}
			return a.printRequest(cr)
		},
	}
	c.Flags().StringVarP(&req.Message, "message", "m", "", "what the change is, for the reviewer")
	c.Flags().IntVar(&req.Version, "version", 0, "the source version to promote (default: the latest)")
	return c
}

// promotionCommand is `beluga promotion list|show|approve|reject` and the
// target project's gate (`gate`, `set-gate`).
func promotionCommand(a *app) *cobra.Command {
	var project, state string
	need := needProject(&project)
	list := &cobra.Command{
		Use:   "list [--state open|applied|rejected]",
		Short: "List the change requests into a project, newest first",
		Args:  args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := need()
			if err != nil {
				return err
			}
			l, err := a.client().Promotions(cmd.Context(), p, state)
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(l)
			}
			t := newTable(a.stdout, "ID", "WORKFLOW", "FROM", "STATE", "AUTHOR", "REVIEWER", "TARGET VERSION", "CREATED")
			for _, r := range l.Requests {
				applied := ""
				if r.AppliedVersion > 0 {
					applied = "v" + strconv.Itoa(r.AppliedVersion)
				}
				t.row(strconv.FormatInt(r.ID, 10), r.Workflow, fmt.Sprintf("%s v%d", r.SourceProject, r.SourceVersion), r.State,
					r.Author, r.Reviewer, applied, when(&r.CreatedAt))
			}
			return t.flush()
		},
	}
	list.Flags().StringVar(&state, "state", "", "only requests in this state: open, applied or rejected")
	show := &cobra.Command{
		Use:   "show ID",
		Short: "Show a change request and its diff (secret values masked)",
		Args:  args("ID"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			p, err := need()
			if err != nil {
				return err
			}
			id, err := parseID("request ID", argv[0])
			if err != nil {
				return err
			}
			cr, err := a.client().Promotion(cmd.Context(), p, id)
			if err != nil {
				return err
			}
			return a.printRequest(cr)
		},
	}
	review := func(approve bool) *cobra.Command {
		var comment string
		verb, short := "reject", "Reject a change request (approve on the project; not its author)"
		if approve {
			verb, short = "approve", "Approve a change request, applying it as a new version of the target (approve on the project; not its author)"
		}
		c := &cobra.Command{
			Use:   verb + " ID [-m COMMENT]",
			Short: short,
			Args:  args("ID"),
			RunE: func(cmd *cobra.Command, argv []string) error {
				p, err := need()
				if err != nil {
					return err
				}
				id, err := parseID("request ID", argv[0])
				if err != nil {
					return err
				}
				cr, err := a.client().ReviewPromotion(cmd.Context(), p, id, approve, comment)
				if err != nil {
					return err
				}
				if a.json() {
					return a.printJSON(cr)
				}
				if cr.AppliedVersion > 0 {
					_, err = fmt.Fprintf(a.stdout, "change request %d applied: %s/%s version %d (from %s v%d)\n", cr.ID,
						cr.TargetProject, cr.Workflow, cr.AppliedVersion, cr.SourceProject, cr.SourceVersion)
				} else {
					_, err = fmt.Fprintf(a.stdout, "change request %d %s by %s\n", cr.ID, cr.State, cr.Reviewer)
				}
				return err
			},
		}
		c.Flags().StringVarP(&comment, "message", "m", "", "the review's comment")
		return c
	}
	var gate api.PromotionGateRequest
	setGate := &cobra.Command{
		Use:   "set-gate [--source PROJECT] [--require-review] [--alert-channel C]",
		Short: "Set where a project's promotions come from and whether its schedules run promoted versions only (owners)",
		Args:  args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := need()
			if err != nil {
				return err
			}
			g, err := a.client().PutPromotionGate(cmd.Context(), p, gate)
			if err != nil {
				return err
			}
			return a.printGate(g)
		},
	}
	setGate.Flags().StringVar(&gate.SourceProject, "source", "", "the only project promotions may come from (default: any)")
	setGate.Flags().BoolVar(&gate.RequireReview, "require-review", false, "schedules run the latest promoted version only; direct edits are drift")
	setGate.Flags().StringSliceVar(&gate.AlertChannels, "alert-channel", nil, "alert channel told once per drift (repeat or comma-separate)")
	showGate := &cobra.Command{
		Use:   "gate",
		Short: "Show a project's promotion setting and its drifted workflows",
		Args:  args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := need()
			if err != nil {
				return err
			}
			g, err := a.client().PromotionGate(cmd.Context(), p)
			if err != nil {
				return err
			}
			return a.printGate(g)
		},
	}
	g := group("promotion", "Review change requests into a project (promotion with review)", list, show, review(true), review(false), showGate, setGate)
	g.PersistentFlags().StringVarP(&project, "project", "p", os.Getenv("BELUGA_PROJECT"), "the target project (env BELUGA_PROJECT)")
	return g
}

func (a *app) printRequest(cr api.ChangeRequest) error {
	if a.json() {
		return a.printJSON(cr)
	}
	w := &strings.Builder{}
	fmt.Fprintf(w, "change request %d: %s/%s v%d -> %s (%s)\n", cr.ID, cr.SourceProject, cr.Workflow, cr.SourceVersion, cr.TargetProject, cr.State)
	fmt.Fprintf(w, "author: %s\n", cr.Author)
	if cr.Message != "" {
		fmt.Fprintf(w, "message: %s\n", cr.Message)
	}
	if cr.Reviewer != "" {
		fmt.Fprintf(w, "reviewer: %s %s", cr.Reviewer, when(cr.ReviewedAt))
		if cr.ReviewComment != "" {
			fmt.Fprintf(w, ": %s", cr.ReviewComment)
		}
		fmt.Fprintln(w)
	}
	if cr.AppliedVersion > 0 {
		fmt.Fprintf(w, "applied as %s/%s version %d\n", cr.TargetProject, cr.Workflow, cr.AppliedVersion)
	}
	if cr.Stale {
		fmt.Fprintf(w, "stale: the target is at version %d, not %d as requested; an approval is refused\n", cr.TargetVersion, cr.BaseVersion)
	}
	if _, err := fmt.Fprint(a.stdout, w.String()); err != nil {
		return err
	}
	if cr.Diff == nil {
		return nil
	}
	d := &strings.Builder{}
	base := fmt.Sprintf("%s v%d", cr.TargetProject, cr.BaseVersion)
	if cr.BaseVersion == 0 {
		base = cr.TargetProject + " (none)"
	}
	fmt.Fprintf(d, "\ndiff: %s -> %s v%d\n", base, cr.SourceProject, cr.SourceVersion)
	writeDiffBody(d, *cr.Diff)
	_, err := fmt.Fprint(a.stdout, d.String())
	return err
}

func (a *app) printGate(g api.PromotionGate) error {
	if a.json() {
		return a.printJSON(g)
	}
	w := &strings.Builder{}
	fmt.Fprintf(w, "project %s: promotions from %s, review %s, drift alerts to %s\n", g.Project, orDefault(g.SourceProject, "any project"),
		map[bool]string{true: "required (schedules run promoted versions)", false: "not required"}[g.RequireReview],
		orDefault(strings.Join(g.AlertChannels, ", "), "no channel"))
	for _, d := range g.Drift {
		fmt.Fprintf(w, "DRIFT %s: version %d edited by %s outside promotion at %s; schedules run promoted version %d\n",
			d.Workflow, d.SinceVersion, orDefault(d.EditedBy, "the server"), when(&d.DetectedAt), d.PromotedVersion)
	}
	_, err := fmt.Fprint(a.stdout, w.String())
	return err
}
