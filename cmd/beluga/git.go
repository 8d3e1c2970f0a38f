package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/beluga-scheduler/beluga/api"
)

// gitCommand is `beluga git`: a project's Git binding and its syncs
// (README, "Workflows in Git").
func gitCommand(a *app) *cobra.Command {
	var project string
	need := needProject(&project)
	var (
		req                   api.GitBindingRequest
		password              passwordFlags
		sshKeyFile, knownFile string
	)
	set := &cobra.Command{
		Use:   "set --url URL [--branch B] [--dir D] [--user U --password-stdin | --password-file F | --no-password] [--ssh-key-file F --known-hosts-file F] [--sync-interval MIN] [--mode read_only|write_back] [--new-hook-secret]",
		Short: "Bind a project to a Git repository (project owners; a local path: admins); the password is kept when none is given",
		Args:  args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := need()
			if err != nil {
				return err
			}
			pw, err := password.read(a.stdin)
			if err != nil {
				return err
			}
			req.Password = pw
			if sshKeyFile != "" {
				key, err := os.ReadFile(sshKeyFile)
				if err != nil {
					return usageError{fmt.Errorf("--ssh-key-file: %w", err)}
				}
				k := string(key)
				req.SSHKey = &k
			}
			if knownFile != "" {
				known, err := os.ReadFile(knownFile)
				if err != nil {
					return usageError{fmt.Errorf("--known-hosts-file: %w", err)}
				}
				req.KnownHosts = string(known)
			}
			b, err := a.client().PutGitBinding(cmd.Context(), p, req)
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(b)
			}
			_, err = fmt.Fprintf(a.stdout, "project %s bound to %s (branch %s, dir %s, password %s, mode %s, sync every %s)\n", b.Project, b.URL,
				orDefault(b.Branch, "the default"), orDefault(b.Dir, "the root"), map[bool]string{true: "set", false: "none"}[b.PasswordSet],
				orDefault(b.Mode, "edits allowed"), syncEvery(b.SyncInterval))
			if err == nil && b.HookSecret != "" {
				_, err = fmt.Fprintf(a.stdout, "webhook secret (shown once): %s\nwebhook URL: <server>/api/v1/git-hooks/%s\n", b.HookSecret, b.Project)
			}
			return err
		},
	}
	f := set.Flags()
	f.StringVar(&req.URL, "url", "", "the repository: https://..., ssh://host/path or git@host:path (or, admins only, an absolute path or file:// URL on the API server)")
	f.StringVar(&req.Branch, "branch", "", "the branch to sync (default: the repository's default branch)")
	f.StringVar(&req.Dir, "dir", "", "the directory in the repository holding workflows/ (default: the root)")
	f.StringVar(&req.User, "user", "", "user name of the password or token")
	password.add(f, "password or token")
	f.StringVar(&sshKeyFile, "ssh-key-file", "", "an SSH URL's private key (no passphrase), stored sealed; left out keeps the stored one")
	f.StringVar(&knownFile, "known-hosts-file", "", "an SSH URL's known hosts: lines of ssh-keyscan's output or SHA256: fingerprints")
	f.IntVar(&req.SyncInterval, "sync-interval", 0, "minutes between the leader's own syncs (0: never)")
	f.StringVar(&req.Mode, "mode", "", `edits outside Git: "" allowed, read_only refused, write_back committed to the branch`)
	f.StringSliceVar(&req.AlertChannels, "alert-channel", nil, "alert channel told once per refused commit (repeat or comma-separate)")
	f.BoolVar(&req.NewHookSecret, "new-hook-secret", false, "make a new webhook secret (printed once) for POST /api/v1/git-hooks/PROJECT")
	f.BoolVar(&req.DropHookSecret, "drop-hook-secret", false, "remove the webhook secret")

	show := &cobra.Command{
		Use:   "show",
		Short: "Show a project's Git binding (never its password) and its last sync",
		Args:  args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := need()
			if err != nil {
				return err
			}
			b, err := a.client().GetGitBinding(cmd.Context(), p)
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(b)
			}
			t := newTable(a.stdout, "FIELD", "VALUE")
			t.row("project", b.Project)
			t.row("url", b.URL)
			t.row("branch", orDefault(b.Branch, "(default)"))
			t.row("dir", orDefault(b.Dir, "(root)"))
			t.row("user", b.User)
			t.row("password", map[bool]string{true: "set", false: "none"}[b.PasswordSet])
			if b.SSHKeySet || b.KnownHosts != "" {
				t.row("ssh key", map[bool]string{true: "set", false: "none"}[b.SSHKeySet])
				t.row("known hosts", strings.ReplaceAll(strings.TrimSpace(b.KnownHosts), "\n", " | "))
			}
			t.row("bound by", b.BoundBy)
			t.row("mode", orDefault(b.Mode, "(edits allowed)"))
			t.row("sync every", syncEvery(b.SyncInterval))
			t.row("alert channels", strings.Join(b.AlertChannels, ","))
			t.row("webhook", map[bool]string{true: "secret set", false: "none"}[b.HookSet])
			t.row("last commit", b.LastCommit)
			t.row("last sync", when(b.LastSyncedAt))
			if b.LastError != "" {
				t.row("refused commit", b.LastAttemptCommit)
				t.row("refused file", b.LastErrorFile)
				t.row("refused because", b.LastError)
			}
			return t.flush()
		},
	}

	sync := &cobra.Command{
		Use:   "sync",
		Short: "Apply the head of the project's branch: every workflow file or, when one is refused, none (exit 2 naming the file and why)",
		Args:  args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := need()
			if err != nil {
				return err
			}
			r, err := a.client().SyncGit(cmd.Context(), p)
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(r)
			}
			fmt.Fprintf(a.stdout, "project %s synced to commit %s\n", r.Project, r.Commit)
			t := newTable(a.stdout, "FILE", "WORKFLOW", "VERSION", "CHANGED")
			for _, w := range r.Workflows {
				change := map[bool]string{true: "new version", false: "unchanged"}[w.Created]
				if w.Deleted {
					change = "deleted (file gone)"
				}
				t.row(w.File, w.Workflow, fmt.Sprint(w.Version), change)
			}
			for _, sc := range r.Schedules {
				change := map[bool]string{true: "created", false: "unchanged or replaced"}[sc.Created]
				if sc.Deleted {
					change = "schedule deleted (file gone)"
				}
				t.row(sc.File, sc.Workflow, "schedule", change)
			}
			for _, d := range r.Datasources {
				t.row(d.File, d.Name, "datasource", "checked")
			}
			for _, g := range r.TaskGroups {
				t.row(g.File, g.Name, "task group", "checked")
			}
			return t.flush()
		},
	}

	unbind := &cobra.Command{
		Use:   "unbind",
		Short: "Unbind a project from its repository (its workflows stay)",
		Args:  args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := need()
			if err != nil {
				return err
			}
			if err := a.client().DeleteGitBinding(cmd.Context(), p); err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(map[string]any{"project": p, "unbound": true})
			}
			_, err = fmt.Fprintf(a.stdout, "project %s unbound from its repository\n", p)
			return err
		},
	}
	g := group("git", "A project's workflows from a Git repository: bind, show, sync", set, show, sync, unbind)
	g.PersistentFlags().StringVarP(&project, "project", "p", os.Getenv("BELUGA_PROJECT"), "project (env BELUGA_PROJECT)")
	return g
}

func syncEvery(minutes int) string {
	if minutes == 0 {
		return "never (sync, webhook)"
	}
	return fmt.Sprintf("%d min", minutes)
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
