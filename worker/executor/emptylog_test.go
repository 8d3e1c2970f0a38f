package executor

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func inode(t *testing.T, path string) uint64 {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Sys().(*syscall.Stat_t).Ino
}

// A task that prints nothing has its (empty) log from its start without an
// inode of its own; one that prints gets a file of its own holding its
// output, and the shared empty file stays empty
// (before, every task's log was a new file: a different inode each).
func TestSilentTaskLogSharesTheEmptyFile(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{sameUser: true})
	empty := filepath.Join(b.dir, "logs", emptyLogName)
	log := func(id string) string { return filepath.Join(b.dir, "logs", "7", id+".log") }

	b.mustDispatch(t, dispatch(1, "true"))
	b.mustDispatch(t, dispatch(2, "true"))
	b.mustDispatch(t, dispatch(3, "echo said"))
	for id := int64(1); id <= 3; id++ {
		b.waitResult(t, id)
	}
	for _, id := range []string{"1", "2"} {
		got, err := os.ReadFile(log(id))
		if err != nil || len(got) != 0 {
			t.Fatalf("silent task %s: log %q, %v; want an empty log", id, got, err)
		}
		if inode(t, log(id)) != inode(t, empty) {
			t.Fatalf("silent task %s has a log inode of its own", id)
		}
	}
	if got, _ := os.ReadFile(log("3")); string(got) != "said\n" {
		t.Fatalf("log of the task that printed = %q", got)
	}
	if inode(t, log("3")) == inode(t, empty) {
		t.Fatal("the task that printed wrote through the shared empty file")
	}

	if fi, err := os.Stat(empty); err != nil || fi.Size() != 0 {
		t.Fatalf("shared empty log: %v %v, want it empty", fi, err)
	}
	if got, _ := os.ReadFile(log("2")); len(got) != 0 {
		t.Fatalf("silent task 2's log took others' output: %q", got)
	}
	// A log that is still the link when output arrives (a duplicate's, after
	// a restart) becomes a file of its own too; the others keep theirs.
	if err := os.Link(empty, log("4")); err != nil {
		t.Fatal(err)
	}
	b.mustDispatch(t, dispatch(4, "echo four"))
	b.waitResult(t, 4)
	if got, _ := os.ReadFile(log("4")); string(got) != "four\n" || inode(t, log("4")) == inode(t, empty) {
		t.Fatalf("linked log of a task that printed = %q", got)
	}
	if got, _ := os.ReadFile(log("1")); len(got) != 0 {
		t.Fatalf("silent task 1's log = %q", got)
	}
}
