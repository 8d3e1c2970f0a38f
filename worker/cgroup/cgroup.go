// Package cgroup holds a worker's task processes in cgroup v2 groups: one
// child cgroup per task, which the kernel keeps every descendant in whatever
// it does (setsid, a cleared environment, double forks), so that killing the
// cgroup kills all a task started.
//
// Layout: <base>/beluga-<worker pid>/task-<id>-<attempt>. base is the
// worker.cgroup_dir setting, or with "auto" the worker's own cgroup when
// /sys/fs/cgroup is cgroup2 and that cgroup is writable. Without cgroups the
// executor falls back to its child subreaper (worker/executor/leftovers.go).
package cgroup

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/beluga-scheduler/beluga/internal/procfs"
)

// Setting values besides a directory.
const (
	Auto = "auto"
	Off  = "off"
)

// Mount is where the host's cgroup hierarchy is looked for by Auto.
const Mount = "/sys/fs/cgroup"

// Base resolves the worker.cgroup_dir setting to the directory the worker
// creates its own cgroup in. "" with a reason means cgroups are off; an
// error means the setting names a directory that cannot serve (bad input).
func Base(setting string) (base, reason string, err error) {
	switch setting {
	case Off:
		return "", "worker.cgroup_dir is off", nil
	case "", Auto:
		var st unix.Statfs_t
		if err := unix.Statfs(Mount, &st); err != nil {
			return "", fmt.Sprintf("cannot statfs %s: %v", Mount, err), nil
		}
		self, err := os.ReadFile("/proc/self/cgroup")
		if err != nil {
			return "", fmt.Sprintf("cannot read /proc/self/cgroup: %v", err), nil
		}
		base, reason = autoBase(int64(st.Type), self, Mount)
		if base != "" && unix.Access(base, unix.W_OK) != nil {
			return "", "this process's cgroup " + base + " is not writable", nil
		}
		return base, reason, nil
	}
	if !filepath.IsAbs(setting) {
		return "", "", fmt.Errorf("worker.cgroup_dir %q: want auto, off or an absolute directory", setting)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(setting, &st); err != nil {
		return "", "", fmt.Errorf("worker.cgroup_dir %s: %w", setting, err)
	}
	if int64(st.Type) != unix.CGROUP2_SUPER_MAGIC {
		return "", "", fmt.Errorf("worker.cgroup_dir %s: not on a cgroup2 file system", setting)
	}
	return filepath.Clean(setting), "", nil
}

// autoBase decides Auto from the file system type of mount and the content
// of /proc/self/cgroup: the process's cgroup under mount, or "" and why not.
func autoBase(fsType int64, selfCgroup []byte, mount string) (base, reason string) {
	if fsType != unix.CGROUP2_SUPER_MAGIC {
		return "", mount + " is not a cgroup2 mount (cgroup v1 or none)"
	}
	p, ok := SelfPath(selfCgroup)
	if !ok {
		return "", "/proc/self/cgroup has no cgroup v2 line (0::/path)"
	}
	return filepath.Join(mount, p), ""
}

// SelfPath returns the path of the "0::/path" line of a /proc/<pid>/cgroup
// file: the process's cgroup in the v2 hierarchy.
func SelfPath(procCgroup []byte) (string, bool) {
	sc := bufio.NewScanner(bytes.NewReader(procCgroup))
	for sc.Scan() {
		p, ok := strings.CutPrefix(sc.Text(), "0::")
		if !ok {
			continue
		}
		// A process in a cgroup outside its namespace reads "/.."-prefixed
		// paths; nothing under the mount names it.
		if !strings.HasPrefix(p, "/") || strings.Contains(p, "/..") {
			return "", false
		}
		return p, true
	}
	return "", false
}

// ProcPath is pid's cgroup v2 path ("/a/b"), from /proc; false when pid is
// gone or has none. A zombie still names the cgroup it died in.
func ProcPath(pid int) (string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup")
	if err != nil {
		return "", false
	}
	return SelfPath(b)
}

// Dir is the worker's own cgroup: the parent of its task cgroups.
type Dir struct {
	path string
}

// Open creates base/beluga-<pid> and removes what a previous incarnation
// left: task cgroups in it (a restarted worker in a container gets the same
// pid), and sibling beluga-<pid> cgroups of workers no longer running.
func Open(base string) (*Dir, error) {
	d := &Dir{path: filepath.Join(base, "beluga-"+strconv.Itoa(os.Getpid()))}
	if err := os.Mkdir(d.path, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, fmt.Errorf("cgroup: create %s: %w", d.path, err)
	}
	var errs []error
	for _, c := range subdirs(d.path) {
		errs = append(errs, Remove(filepath.Join(d.path, c), removeTimeout))
	}
	for _, c := range subdirs(base) {
		if c == filepath.Base(d.path) || !staleWorker(c) {
			continue
		}
		errs = append(errs, Remove(filepath.Join(base, c), removeTimeout))
	}
	if err := errors.Join(errs...); err != nil {
		return d, fmt.Errorf("cgroup: stale cgroups of an earlier worker: %w", err)
	}
	return d, nil
}

// staleWorker reports whether name under base is the cgroup of a worker
// that no longer runs: beluga-<pid> with no live process pid. A reused pid
// keeps a dead worker's cgroup until that process ends too; its tasks were
// killed by the worker's guard when it died (worker/guard).
func staleWorker(name string) bool {
	n, ok := strings.CutPrefix(name, "beluga-")
	if !ok {
		return false
	}
	pid, err := strconv.Atoi(n)
	if err != nil || pid <= 0 {
		return false
	}
	return !procfs.Alive(pid)
}

// Path is the worker cgroup's directory.
func (d *Dir) Path() string { return d.path }

// Close kills every task cgroup still there and removes the worker's
// cgroup.
func (d *Dir) Close() error { return Remove(d.path, removeTimeout) }

// Task is one task's cgroup.
type Task struct {
	path string
	fd   int // open directory, for clone3 CLONE_INTO_CGROUP; -1 once closed
}

// NewTask creates the cgroup name under d and opens it. One left by an
// earlier run of the same name is killed and removed first.
func (d *Dir) NewTask(name string) (*Task, error) {
	p := filepath.Join(d.path, name)
	err := os.Mkdir(p, 0o755)
	if errors.Is(err, os.ErrExist) {
		if err = Remove(p, removeTimeout); err == nil {
			err = os.Mkdir(p, 0o755)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("cgroup: create %s: %w", p, err)
	}
	fd, err := unix.Open(p, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		_ = unix.Rmdir(p)
		return nil, fmt.Errorf("cgroup: open %s: %w", p, err)
	}
	return &Task{path: p, fd: fd}, nil
}

// FD is the cgroup's directory descriptor (syscall.SysProcAttr.CgroupFD).
func (t *Task) FD() int { return t.fd }

// Path is the task cgroup's directory.
func (t *Task) Path() string { return t.path }

// CloseFD closes the descriptor once the process started.
func (t *Task) CloseFD() {
	if t.fd >= 0 {
		_ = unix.Close(t.fd)
		t.fd = -1
	}
}

// Kill SIGKILLs every process in the task's cgroup.
func (t *Task) Kill() { Kill(t.path) }

// Remove kills what is left, waits until the cgroup is empty and removes it.
func (t *Task) Remove(timeout time.Duration) error {
	t.CloseFD()
	return Remove(t.path, timeout)
}

// Populated reports whether a live process is in the task's cgroup or
// below.
func (t *Task) Populated() bool { return populated(t.path) }

// removeTimeout bounds the wait for a killed cgroup to empty.
const removeTimeout = 5 * time.Second

// noKillFile, for tests, makes Kill act as on a kernel without cgroup.kill.
var noKillFile bool

// Kill SIGKILLs every process in the cgroup dir and its descendants:
// cgroup.kill (Linux 5.14), else each member of cgroup.procs, below first,
// a few rounds (a process forking meanwhile leaves a child).
func Kill(dir string) {
	if !noKillFile {
		if err := os.WriteFile(filepath.Join(dir, "cgroup.kill"), []byte("1"), 0); err == nil {
			return
		}
	}
	for range 8 {
		if killMembers(dir) == 0 {
			return
		}
	}
}

// killMembers SIGKILLs the processes of dir's subtree and returns how many.
func killMembers(dir string) int {
	n := 0
	for _, c := range subdirs(dir) {
		n += killMembers(filepath.Join(dir, c))
	}
	for _, pid := range Procs(dir) {
		if pid > 0 && syscall.Kill(pid, syscall.SIGKILL) == nil {
			n++
		}
	}
	return n
}

// Members lists the processes of the task's cgroup and its descendants.
func (t *Task) Members() []int { return members(t.path) }

func members(dir string) []int {
	out := Procs(dir)
	for _, c := range subdirs(dir) {
		out = append(out, members(filepath.Join(dir, c))...)
	}
	return out
}

// Procs lists the processes of cgroup dir itself (not its descendants).
func Procs(dir string) []int {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if pid, err := strconv.Atoi(f); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// Remove kills the processes of cgroup dir's subtree, waits at most timeout
// until none is left, and removes the subtree. A dir already gone is no
// error.
func Remove(dir string, timeout time.Duration) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	deadline := time.Now().Add(timeout)
	Kill(dir)
	for populated(dir) {
		if time.Now().After(deadline) {
			return fmt.Errorf("cgroup: %s still has processes %v %s after SIGKILL", dir, Procs(dir), timeout)
		}
		Kill(dir)
		time.Sleep(2 * time.Millisecond) // the kernel finishing the deaths
	}
	return rmdirTree(dir)
}

// populated reads cgroup.events ("populated 1": a live process in the
// subtree); a root cgroup has no such file, so its procs are counted.
func populated(dir string) bool {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.events"))
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			if _, serr := os.Stat(dir); serr != nil {
				return false // removed meanwhile
			}
		}
		return len(Procs(dir)) > 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "populated "); ok {
			return v != "0"
		}
	}
	return false
}

// rmdirTree removes the empty cgroup dir and its child cgroups, deepest
// first (a cgroup directory holds only kernel files, which rmdir ignores).
func rmdirTree(dir string) error {
	var errs []error
	for _, c := range subdirs(dir) {
		errs = append(errs, rmdirTree(filepath.Join(dir, c)))
	}
	if err := unix.Rmdir(dir); err != nil && !errors.Is(err, unix.ENOENT) {
		errs = append(errs, fmt.Errorf("cgroup: remove %s: %w", dir, err))
	}
	return errors.Join(errs...)
}

// subdirs lists the child cgroups of dir.
func subdirs(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	return out
}
