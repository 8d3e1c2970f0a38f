package gitsync

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/testkit/gittest"
)

func TestWorkflowName(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		base, want string
		ok         bool
	}{
		{"etl.yaml", "etl", true},
		{"etl.yml", "etl", true},
		{"etl.json", "etl", true},
		{"README.md", "", false},
		{".yaml", "", false},
		{".hidden.yaml", "", false},
		{"etl.yaml.bak", "", false},
	} {
		got, ok := WorkflowName(c.base)
		if got != c.want || ok != c.ok {
			t.Errorf("WorkflowName(%q) = %q, %v; want %q, %v", c.base, got, ok, c.want, c.ok)
		}
	}
}

func TestCheckDir(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		dir string
		ok  bool
	}{{"", true}, {"etl", true}, {"a/b/", true}, {"/a", true}, {"..", false}, {"a/../b", false}, {`a\b`, false}} {
		if err := CheckDir(c.dir); (err == nil) != c.ok {
			t.Errorf("CheckDir(%q) = %v, want ok %v", c.dir, err, c.ok)
		}
	}
}

func TestSecretsInClear(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, spec string
		want       []string // a part of each problem, in order
	}{
		{"none", "params: {day: '1'}\n", nil},
		{"marked with the mask", "params: {pw: '***'}\nsecret_params: [pw]\n", nil},
		{"marked in clear", "params: {pw: hunter2}\nsecret_params: [pw]\n", []string{`workflow param "pw" is secret`}},
		{"named like one", "params: {db_password: x, api_token: y, day: z}\n", []string{`"api_token" looks like`, `"db_password" looks like`}},
		{"named like one, empty", "params: {db_password: ''}\n", nil},
		{"task's own", "tasks:\n  - {name: a, command: 'true', params: {key: v}, secret_params: [key]}\n", []string{`task "a" param "key" is secret`}},
		{"workflow-wide marks a task's", "secret_params: [key]\nparams: {key: '***'}\ntasks:\n  - {name: a, command: 'true', params: {key: v}}\n", []string{`task "a" param "key" is secret`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			y := "name: w\n" + c.spec
			if !strings.Contains(c.spec, "tasks:") {
				y += "tasks:\n  - {name: a, command: 'true'}\n"
			}
			w, err := spec.Parse([]byte(y))
			if err != nil {
				t.Fatal(err)
			}
			got := SecretsInClear(w)
			if len(got) != len(c.want) {
				t.Fatalf("got %q, want %d problems", got, len(c.want))
			}
			for i, part := range c.want {
				if !strings.Contains(got[i], part) {
					t.Errorf("problem %d %q lacks %q", i, got[i], part)
				}
			}
		})
	}
}

// TestFetch reads a real bare repository (made with the git binary) by
// path: the branch's head, only the layout's files, under the directory.
func TestFetch(t *testing.T) {
	t.Parallel()
	repo := gittest.New(t)
	ctx := context.Background()
	if _, err := Fetch(ctx, Source{URL: repo.Bare}); err == nil || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("an empty repository: %v", err)
	}
	c1 := repo.Commit("main", "one", map[string]string{"p/workflows/a.yaml": "x: 1\n", "p/workflows/notes.txt": "n",
		"p/workflows/sub/b.yaml": "y", "workflows/root.yaml": "r"})
	c2 := repo.Commit("dev", "two", map[string]string{"p/workflows/c.yml": "z"})
	snap, err := Fetch(ctx, Source{URL: repo.Bare, Branch: "main", Dir: "p"})
	if err != nil || snap.Commit != c1 || len(snap.Files) != 1 || snap.Files[0].Path != "p/workflows/a.yaml" ||
		snap.Files[0].Workflow != "a" || string(snap.Files[0].Data) != "x: 1\n" {
		t.Fatalf("main: %+v %v", snap, err)
	}
	snap, err = Fetch(ctx, Source{URL: "file://" + repo.Bare, Branch: "dev", Dir: "/p/"})
	if err != nil || snap.Commit != c2 || len(snap.Files) != 2 || snap.Files[1].Workflow != "c" {
		t.Fatalf("dev: %+v %v", snap, err)
	}
	if snap, err := Fetch(ctx, Source{URL: repo.Bare, Dir: "none"}); err != nil || len(snap.Files) != 0 {
		t.Fatalf("a directory the commit lacks: %+v %v", snap, err)
	}
	if _, err := Fetch(ctx, Source{URL: repo.Bare, Branch: "gone"}); err == nil || !strings.Contains(err.Error(), "gone") {
		t.Fatalf("a missing branch: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Fetch(cctx, Source{URL: repo.Bare}); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled fetch: %v", err)
	}
}

// TestFetchOverHTTP clones from a real Git HTTP server (git http-backend)
// that wants basic auth: one commit deep, the branch's head, and a wrong
// password fails naming the repository but never the password.
func TestFetchOverHTTP(t *testing.T) {
	t.Parallel()
	repo := gittest.New(t)
	repo.Commit("main", "one", map[string]string{"workflows/a.yaml": "a"})
	c2 := repo.Commit("main", "two", map[string]string{"workflows/b.yaml": "b"})
	url := repo.Serve("bot", "tok-123") + "/repo.git"
	ctx := context.Background()
	snap, err := Fetch(ctx, Source{URL: url, Branch: "main", User: "bot", Password: "tok-123"})
	if err != nil || snap.Commit != c2 || len(snap.Files) != 2 {
		t.Fatalf("fetch: %+v %v", snap, err)
	}
	_, err = Fetch(ctx, Source{URL: url, User: "bot", Password: "wrong-pw"})
	if err == nil || !strings.Contains(err.Error(), url) || strings.Contains(err.Error(), "wrong-pw") {
		t.Fatalf("a wrong password: %v", err)
	}
}

// TestFetchBoundsFiles: a commit with more workflow files than one sync
// reads is refused, naming the first file past the bound and the commit.
func TestFetchBoundsFiles(t *testing.T) {
	t.Parallel()
	repo := gittest.New(t)
	files := map[string]string{}
	for i := range MaxFiles + 1 {
		files[fmt.Sprintf("workflows/w%04d.yaml", i)] = "x"
	}
	c := repo.Commit("main", "many", files)
	snap, err := Fetch(context.Background(), Source{URL: repo.Bare})
	var fe *FileError
	if !errors.As(err, &fe) || fe.File != fmt.Sprintf("workflows/w%04d.yaml", MaxFiles) || snap.Commit != c {
		t.Fatalf("fetch of %d files: %+v %v", MaxFiles+1, snap.Commit, err)
	}
}
