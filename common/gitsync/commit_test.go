package gitsync

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/testkit/gittest"
)

// TestCommitLocal: commits into a real bare repository in place: a file
// in new nested directories, a change beside the others, a removal that
// empties (and drops) its directories; the git binary reads them back;
// the same content again makes no commit; git fsck finds the objects
// well formed (trees in Git's order).
func TestCommitLocal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := gittest.New(t)
	repo.Commit("main", "first", map[string]string{"keep.txt": "keep\n", "d/workflows/a.yaml": "a\n"})
	src := Source{URL: repo.Bare, Branch: "main"}
	who := object.Signature{Name: "ann", Email: "ann@users.beluga.invalid"}
	c1, err := Commit(ctx, src, Change{Path: "d/x/y/z.yaml", Data: []byte("z\n"), Author: who, Message: "add z"})
	if err != nil {
		t.Fatal(err)
	}
	if repo.Show("main", "d/x/y/z.yaml") != "z\n" || repo.Show("main", "d/workflows/a.yaml") != "a\n" || repo.Show("main", "keep.txt") != "keep\n" {
		t.Fatal("the tree after the commit lost or lacks a file")
	}
	if name, email, msg := repo.Head("main"); name != "ann" || email != "ann@users.beluga.invalid" || msg != "add z" {
		t.Fatalf("head %q %q %q", name, email, msg)
	}
	if again, err := Commit(ctx, src, Change{Path: "d/x/y/z.yaml", Data: []byte("z\n"), Author: who, Message: "same"}); err != nil || again != c1 {
		t.Fatalf("the same content: %s %v, want no new commit (%s)", again, err, c1)
	}
	if _, err := Commit(ctx, src, Change{Path: "d/x/y/z.yaml", Author: who, Message: "drop z"}); err != nil {
		t.Fatal(err)
	}
	if repo.Show("main", "d/x/y/z.yaml") != "" || repo.Show("main", "d/workflows/a.yaml") != "a\n" {
		t.Fatal("the removal")
	}
	// The git binary checks the repository whole.
	if out, err := exec.Command("git", "--git-dir", repo.Bare, "fsck", "--strict").CombinedOutput(); err != nil {
		t.Fatalf("git fsck: %v\n%s", err, out)
	}
	snap, err := Fetch(ctx, Source{URL: repo.Bare, Branch: "main", Dir: "d"})
	if err != nil || len(snap.Files) != 1 || snap.Files[0].Workflow != "a" {
		t.Fatalf("fetch after the commits: %+v %v", snap, err)
	}
	if _, err := Commit(ctx, Source{URL: repo.Bare}, Change{Path: "x", Data: []byte("x")}); err == nil {
		t.Fatal("a write-back without a branch")
	}
	// A new branch starts from an empty tree.
	if _, err := Commit(ctx, Source{URL: repo.Bare, Branch: "other"}, Change{Path: "w/b.yaml", Data: []byte("b\n"), Author: who, Message: "b"}); err != nil {
		t.Fatal(err)
	}
	if repo.Show("other", "w/b.yaml") != "b\n" || repo.Show("other", "keep.txt") != "" {
		t.Fatal("the new branch")
	}
}

func TestFileOfMasksSecrets(t *testing.T) {
	t.Parallel()
	plain := []byte("# a comment kept\ntasks:\n  - name: a\n    command: echo a\n")
	w, err := spec.Parse(append([]byte("name: a\n"), plain...))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := FileOf(plain, w); err != nil || string(got) != string(plain) {
		t.Fatalf("a spec without secrets is committed as sent: %q %v", got, err)
	}
	body := []byte("name: a\nsecret_params: [db_password]\nparams:\n  db_password: hunter2\n  api_token: abc\n  day: \"01\"\n" +
		"tasks:\n  - name: a\n    command: echo a\n    params:\n      password: p4ss\n")
	if w, err = spec.Parse(body); err != nil {
		t.Fatal(err)
	}
	got, err := FileOf(body, w)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"hunter2", "abc", "p4ss"} {
		if strings.Contains(string(got), secret) {
			t.Fatalf("the file holds %q:\n%s", secret, got)
		}
	}
	back, err := spec.Parse(got)
	if err != nil {
		t.Fatalf("the file does not parse: %v\n%s", err, got)
	}
	if back.Params["db_password"] != "***" || back.Params["api_token"] != "***" || back.Params["day"] != "01" || back.Tasks[0].Params["password"] != "***" {
		t.Fatalf("parsed back: %+v %+v", back.Params, back.Tasks[0].Params)
	}
	if bad := SecretsInClear(back); len(bad) != 0 {
		t.Fatalf("the masked file still has secrets in clear: %v", bad)
	}
}
