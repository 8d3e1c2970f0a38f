package executor

import (
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// An empty work dir goes back to the spare pool at the task's end and the
// next task gets it; a dir the task wrote in, or changed the mode of, stays.
func TestWorkDirRecycledOnlyWhenUntouched(t *testing.T) {
	t.Parallel()
	b := setup(t, Config{Shell: "sh", Slots: 1, sameUser: true})
	work := func(id int64) string { return filepath.Join(b.dir, "work", "7", strconv.FormatInt(id, 10)) }
	cases := []struct {
		cmd  string
		kept bool
	}{
		{"true", false},
		{"echo x > f", true},
		{"chmod 0777 .", true},
		{"mkdir d && rmdir d", false}, // empty again at the end
		{"ln -s / l", true},
	}
	for i, c := range cases {
		id := int64(i + 1)
		b.mustDispatch(t, dispatch(id, c.cmd))
		if res := b.waitResult(t, id); res.State != "succeeded" {
			t.Fatalf("%q: result %+v", c.cmd, res)
		}
		_, err := os.Stat(work(id))
		if kept := err == nil; kept != c.kept {
			t.Fatalf("%q: work dir kept = %v (%v), want %v", c.cmd, kept, err, c.kept)
		}
	}
	// The recycled dirs are in the pool, empty and private again.
	n := 0
	for len(b.e.spares.dirs) > 0 {
		p := <-b.e.spares.dirs
		if !pristine(p, b.e.spares.dirMode, -1) {
			t.Fatalf("spare %s is not an empty 0755 dir", p)
		}
		n++
	}
	if n == 0 {
		t.Fatal("no spare dir in the pool")
	}
}

func TestPristineSeesEveryEntry(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	const mode = unix.S_IFDIR | 0o755
	if !pristine(dir, mode, -1) {
		t.Fatal("an empty 0755 dir is not pristine")
	}
	// A long name does not fit a getdents buffer with "." and "..".
	long := filepath.Join(dir, fill('a', 250))
	if err := os.WriteFile(long, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if pristine(dir, mode, -1) {
		t.Fatal("a dir holding a file is pristine")
	}
	if pristine(long, mode, -1) {
		t.Fatal("a file is pristine")
	}
}

func fill(c byte, n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = c
	}
	return string(b)
}

// With the refill's dirs ready, the dirs of every slot's task ending
// together all go back to the pool: none is left behind for the refill to
// replace with a new one (a mkdir each on a task's set-up path).
func TestSparePoolTakesBackEverySlotsDir(t *testing.T) {
	t.Parallel()
	const slots = 4
	dir := t.TempDir()
	s := newSpares(filepath.Join(dir, ".spare"), min(max(slots, 4), 64), slots, zap.NewNop())
	if err := s.prepare(); err != nil {
		t.Fatal(err)
	}
	for i := range s.dirsLow { // what the refill keeps ready
		p := filepath.Join(s.dir, "d"+strconv.Itoa(i))
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		s.dirs <- p
	}
	for i := range slots {
		work := filepath.Join(dir, "w"+strconv.Itoa(i))
		if err := os.Mkdir(work, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(work, os.FileMode(s.dirMode&0o777)); err != nil { // a new dir's mode, whatever the umask
			t.Fatal(err)
		}
		if !s.recycle(work) {
			t.Fatalf("dir of task %d of %d ending together not taken back (pool %d of %d)", i+1, slots, len(s.dirs), cap(s.dirs))
		}
	}
}

// TestTaskUserFilesMadeAhead: as root with isolation on, when no user of
// its own is free (taskusers.go), the work dir of a task without a tenant comes from the task user's own pool, made and
// chowned off the task's start path: the task's dir is one of the spares
// that were waiting (its inode), owned by the task user 0700. Its log is
// the worker's 0600 (no task user opens it), and a silent task's is the
// shared empty file (no inode of its own).
func TestTaskUserFilesMadeAhead(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: only root switches tasks to the task user")
	}
	t.Parallel()
	b := setup(t, Config{Shell: "sh", Slots: 1, TaskIsolation: "on", oneTaskUser: true})
	u := b.e.taskUser
	if u == nil {
		t.Fatal("no task user as root with isolation on")
	}
	inodes := func() map[uint64]bool {
		out := map[uint64]bool{}
		ents, _ := os.ReadDir(b.e.spares.dir)
		for _, en := range ents {
			if !strings.HasPrefix(en.Name(), "ud") {
				continue
			}
			var st syscall.Stat_t
			if syscall.Stat(filepath.Join(b.e.spares.dir, en.Name()), &st) == nil && int(st.Uid) == u.uid && st.Mode&0o777 == 0o700 {
				out[st.Ino] = true
			}
		}
		return out
	}
	var spare map[uint64]bool
	wait.UntilErr(t, 30*time.Second, "the refill goroutine to fill the task user's pool", func() error {
		if spare = inodes(); len(spare) < cap(b.e.spares.userDirs) {
			return fmt.Errorf("it holds %d dirs, want %d", len(spare), cap(b.e.spares.userDirs))
		}
		return nil
	})
	b.mustDispatch(t, dispatch(1, "id -u; pwd"))
	if res := b.waitResult(t, 1); res.State != "succeeded" {
		t.Fatalf("result %+v", res)
	}
	logPath, _ := b.e.LogPath(1)
	out, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Fields(string(out))
	if len(lines) != 2 || lines[0] != strconv.Itoa(u.uid) {
		t.Fatalf("task output %q, want the task user's uid %d and its dir", out, u.uid)
	}
	var dir, lg syscall.Stat_t
	if err := syscall.Stat(lines[1], &dir); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Stat(logPath, &lg); err != nil {
		t.Fatal(err)
	}
	if !spare[dir.Ino] {
		t.Errorf("the task's work dir %s (inode %d) is none of the task user's spares", lines[1], dir.Ino)
	}
	if int(dir.Uid) != u.uid || dir.Mode&0o777 != 0o700 {
		t.Errorf("work dir uid %d mode %o; want uid %d, 0700", dir.Uid, dir.Mode&0o777, u.uid)
	}
	if int(lg.Uid) != os.Geteuid() || lg.Mode&0o777 != 0o600 {
		t.Errorf("log uid %d mode %o; want the worker's (uid %d), 0600", lg.Uid, lg.Mode&0o777, os.Geteuid())
	}
	b.mustDispatch(t, dispatch(2, "true"))
	if res := b.waitResult(t, 2); res.State != "succeeded" {
		t.Fatalf("result %+v", res)
	}
	silent, _ := b.e.LogPath(2)
	if !b.e.empty.is(silent) {
		t.Errorf("the silent task's log %s is a file of its own, not the shared empty one", silent)
	}
}
