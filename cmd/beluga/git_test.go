package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/testkit/gittest"
)

// TestGitCommands: beluga git set, show, sync and unbind against a real
// server and a real bare repository: a sync applies a commit and names
// it; a commit with a bad file exits 2 naming the file, and show tells the
// refusal while the workflows stay as they were.
func TestGitCommands(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.want(0, []string{"project", "create", "p"})
	e.want(2, []string{"git", "sync"}, "--project is required")
	e.want(2, []string{"git", "sync", "-p", "p"}, "not bound to a Git repository")
	repo := gittest.New(t)
	c1 := repo.Commit("main", "first", map[string]string{
		"etl/workflows/load.yaml": "tasks:\n  - name: a\n    command: echo a\n",
	})
	e.want(2, []string{"git", "set", "-p", "p", "--url", "ftp://example.com/x.git"}, "scheme ftp is not supported")
	e.want(2, []string{"git", "set", "-p", "p", "--url", "ssh://example.com/x.git"}, "known_hosts is required")
	e.want(2, []string{"git", "set", "-p", "p", "--url", "ssh://example.com/x.git", "--ssh-key-file", "/nonexistent/key"}, "--ssh-key-file")
	e.want(2, []string{"git", "set", "-p", "p", "--url", repo.Bare, "--password-stdin", "--no-password"}, "at most one of")
	e.want(0, []string{"git", "set", "-p", "p", "--url", repo.Bare, "--branch", "main", "--dir", "etl"},
		"project p bound to "+repo.Bare+" (branch main, dir etl, password none, mode edits allowed, sync every never")
	e.want(0, []string{"git", "sync", "-p", "p"}, "synced to commit "+c1, "etl/workflows/load.yaml", "load", "new version")
	e.want(0, []string{"workflow", "list", "-p", "p"}, "load")

	repo.Commit("main", "bad", map[string]string{
		"etl/workflows/load.yaml":   "description: changed\ntasks:\n  - name: a\n    command: echo a\n",
		"etl/workflows/broken.yaml": "tasks: [",
	})
	e.want(2, []string{"git", "sync", "-p", "p"}, "etl/workflows/broken.yaml", "nothing changed")
	out := e.want(0, []string{"git", "show", "-p", "p"}, "last commit", c1, "refused file", "etl/workflows/broken.yaml")
	if !strings.Contains(out, "refused because") {
		t.Fatalf("show does not say why: %s", out)
	}
	var w api.Workflow
	if err := json.Unmarshal([]byte(e.want(0, []string{"workflow", "get", "load", "-p", "p", "-o", "json"})), &w); err != nil || w.Version != 1 {
		t.Fatalf("load after the refused commit: %+v %v", w, err)
	}
	var b api.GitBinding
	if err := json.Unmarshal([]byte(e.want(0, []string{"git", "show", "-p", "p", "-o", "json"})), &b); err != nil ||
		b.LastErrorFile != "etl/workflows/broken.yaml" || b.LastCommit != c1 {
		t.Fatalf("show --json: %+v %v", b, err)
	}
	e.wantIn(t, "tok-1\n", 0, []string{"git", "set", "-p", "p", "--url", "https://git.example.com/etl.git", "--user", "bot", "--password-stdin"}, "password set")
	if out := e.want(0, []string{"git", "show", "-p", "p"}); strings.Contains(out, "tok-1") {
		t.Fatalf("show prints the password: %s", out)
	}
	e.want(0, []string{"git", "unbind", "-p", "p"}, "project p unbound")
	e.want(1, []string{"git", "show", "-p", "p"}, "git binding of project")
}

// TestGitWriteBackCommands: git set's new flags (mode, interval, alert
// channel, hook secret shown once), workflow apply --message committing to
// the branch as the user, and a sync deleting a workflow whose file is gone.
func TestGitWriteBackCommands(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.want(0, []string{"project", "create", "p"})
	repo := gittest.New(t)
	repo.Commit("main", "first", map[string]string{"workflows/load.yaml": "tasks:\n  - name: a\n    command: echo a\n"})
	e.want(2, []string{"git", "set", "-p", "p", "--url", repo.Bare, "--mode", "readwrite"}, `mode "readwrite"`)
	e.want(0, []string{"git", "set", "-p", "p", "--url", repo.Bare, "--branch", "main", "--mode", "write_back", "--sync-interval", "10",
		"--new-hook-secret"}, "mode write_back, sync every 10 min", "webhook secret (shown once): bgh_", "/api/v1/git-hooks/p")
	out := e.want(0, []string{"git", "show", "-p", "p"}, "write_back", "10 min", "secret set")
	if strings.Contains(out, "bgh_") {
		t.Fatalf("show prints the hook secret: %s", out)
	}
	e.want(0, []string{"git", "sync", "-p", "p"}, "load", "new version")
	e.wantIn(t, "tasks:\n  - name: b\n    command: echo b\n", 0, []string{"workflow", "apply", "-p", "p", "--name", "extra", "-f", "-",
		"-m", "add extra"}, "created version 1", "committed to the project's Git branch as")
	if got := repo.Show("main", "workflows/extra.yaml"); !strings.Contains(got, "echo b") {
		t.Fatalf("the branch has %q", got)
	}
	if who, _, msg := repo.Head("main"); who != "admin" || msg != "add extra" {
		t.Fatalf("head by %q: %q", who, msg)
	}
	repo.Commit("main", "drop load", map[string]string{"workflows/load.yaml": ""})
	e.want(0, []string{"git", "sync", "-p", "p"}, "workflows/load.yaml", "deleted (file gone)")
	e.want(1, []string{"workflow", "get", "load", "-p", "p"}, "not found")
}

// wantIn is want with stdin.
func (e *env) wantIn(t *testing.T, stdin string, code int, args []string, contains ...string) {
	t.Helper()
	got, out, errOut := e.cliIn(stdin, args...)
	if got != code {
		t.Fatalf("beluga %s: exit %d, want %d\nstdout: %s\nstderr: %s", strings.Join(args, " "), got, code, out, errOut)
	}
	for _, c := range contains {
		if !strings.Contains(out+errOut, c) {
			t.Fatalf("beluga %s: output lacks %q\nstdout: %s\nstderr: %s", strings.Join(args, " "), c, out, errOut)
		}
	}
}

// TestGitSSHCommands: beluga git set over SSH (a real sshd) with the key
// and known hosts files the README shows, then a sync of a schedule and
// references: show says the key is set, never showing it.
func TestGitSSHCommands(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.want(0, []string{"project", "create", "p"})
	repo := gittest.New(t)
	c1 := repo.Commit("main", "first", map[string]string{
		"etl/workflows/load.yaml":  "tasks:\n  - name: a\n    command: echo a\n",
		"etl/schedules/load.yaml":  "cron: 0 2 * * *\n",
		"etl/task-groups/gpu.yaml": "capacity: 3\n",
	})
	e.want(0, []string{"task-group", "create", "gpu", "--capacity", "3"})
	srv := repo.ServeSSH()
	dir := t.TempDir()
	keyFile, knownFile := filepath.Join(dir, "deploy_key"), filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(keyFile, []byte(srv.Key), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(knownFile, []byte(srv.KnownHosts+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	e.want(0, []string{"git", "set", "-p", "p", "--url", srv.URL, "--branch", "main", "--dir", "etl",
		"--ssh-key-file", keyFile, "--known-hosts-file", knownFile}, "project p bound to "+srv.URL)
	out := e.want(0, []string{"git", "show", "-p", "p"}, "ssh key", "set", "known hosts", srv.KnownHosts)
	if strings.Contains(out, "PRIVATE KEY") {
		t.Fatalf("show prints the key: %s", out)
	}
	e.want(0, []string{"git", "sync", "-p", "p"}, "synced to commit "+c1, "etl/schedules/load.yaml", "schedule",
		"etl/task-groups/gpu.yaml", "task group", "checked")
	e.want(0, []string{"schedule", "show", "load", "-p", "p"}, "0 2 * * *")
}
