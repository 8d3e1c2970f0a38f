package executor

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/beluga-scheduler/beluga/internal/lifeline"
)

// sandbox starts each task process in a mount namespace of its own where
// the server's directories are covered by an empty tmpfs (only the task's
// work dir shows through, at its usual path) and /proc is a fresh procfs
// mounted hidepid=invisible: the task sees neither the server's files nor,
// unless it runs as the server's user, its process. See docs/security.md.
//
// What every task's namespace shares is made once per executor (prepared:
// the covers and the procfs). A task's own is a copy of it, made by one of
// a few forking threads of the process: the thread enters the prepared
// namespace (setns), copies it (unshare), puts a fresh tmpfs over the cover
// that holds the task's work dir and the work dir back on it, forks the
// task and returns to the prepared namespace, leaving the copy to the task
// alone; it ends with the task's last process. The server's other threads
// never see any of it. Per task this is two mounts and no new thread: the
// procfs and the covers, and a thread made and ended per task, were most of
// the sandbox's cost (docs/performance.md).
//
// The forking threads never exit, so a task's parent-death signal
// (Pdeathsig, sent when the thread that forked it exits) fires only when
// the worker dies, as for internal/lifeline's threads.
type sandbox struct {
	cover   []string // mount points of the empty tmpfs, outermost first
	visible string   // shown at its path in the shared namespace ("": none)

	mu       sync.RWMutex // read-held across a fork, so close waits for it
	prepared int          // an nsfs fd holding the prepared namespace; -1 once closed
	// shared is the prepared namespace with visible (the work dirs' root)
	// back at its path: tasks that each run as a user of their own
	// (taskusers.go) share it, each dir being its user's, 0700. -1: none.
	shared int
}

// sandboxThreads fork sandboxed tasks at once; a fork takes well under a
// millisecond.
const sandboxThreads = 2

// forkThreads serve every sandbox of the process (tests make many
// executors): started at the first, never ended. Each has an fs struct of
// its own: Go's threads share one, and setns needs the thread's own.
var forkThreads = lifeline.NewPool(sandboxThreads, func() error {
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		return fmt.Errorf("task sandbox: unshare fs: %w", err)
	}
	return nil
})

// newSandbox covers the directories hide names. Each is covered from its
// highest ancestor that other users cannot enter (a 0700 parent), so that
// the task reaches its work dir through the tmpfs's 0755 directories
// whatever the modes above the data dir. Preparing the namespace is the
// check that the kernel lets this process make one (root, or
// CAP_SYS_ADMIN); probeDir is where a first task would be started, to
// check the rest.
func newSandbox(hide []string, visible, probeDir string) (*sandbox, error) {
	s := &sandbox{prepared: -1, shared: -1, visible: filepath.Clean(visible)}
	for _, h := range hide {
		if p := coverPoint(h); p != "" {
			s.cover = append(s.cover, p)
		}
	}
	s.cover = outermost(s.cover)
	if err := forkThreads.Start(); err != nil {
		return nil, err
	}
	if err := s.prepare(); err != nil {
		return nil, err
	}
	if err := s.probe(probeDir); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}

// coverPoint is where the tmpfs hiding dir goes: its highest ancestor
// without the execute bit for others, else dir itself ("" when dir does
// not exist).
func coverPoint(dir string) string {
	dir = filepath.Clean(dir)
	if _, err := os.Stat(dir); err != nil || dir == "/" {
		return ""
	}
	parts := strings.Split(strings.TrimPrefix(dir, "/"), "/")
	p := ""
	for _, part := range parts {
		p += "/" + part
		if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o001 == 0 {
			return p
		}
	}
	return dir
}

// outermost drops the paths that lie under another one.
func outermost(paths []string) []string {
	slices.Sort(paths)
	var out []string
	for _, p := range paths {
		if len(out) > 0 && within(p, out[len(out)-1]) {
			continue
		}
		out = append(out, p)
	}
	return out
}

// within says whether p is dir or lies under it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// prepare makes the namespace every task's is a copy of, on a thread that
// ends afterwards (nothing was forked on it): mounts propagate from the
// host into it and not back, /proc is a procfs with hidepid=invisible,
// and each cover an empty tmpfs.
func (s *sandbox) prepare() error {
	res := make(chan error, 1)
	go func() {
		// Never unlocked: the thread ends with this goroutine; the fd
		// keeps the namespace.
		runtime.LockOSThread()
		res <- s.makePrepared()
	}()
	if err := <-res; err != nil {
		return fmt.Errorf("task sandbox: %w", err)
	}
	return nil
}

func (s *sandbox) makePrepared() error {
	// CLONE_NEWNS gives this thread its own cwd and root as well.
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("unshare mount namespace: %w", err)
	}
	// Nothing mounted here may propagate back to the host's namespace.
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_SLAVE, ""); err != nil {
		return fmt.Errorf("make mounts slaves: %w", err)
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, "hidepid=invisible"); err != nil {
		return fmt.Errorf("mount /proc hidepid=invisible: %w", err)
	}
	// The work dirs' root, taken before the covers hide it.
	vis, err := s.detach(s.visible)
	if err != nil {
		return err
	}
	if vis >= 0 {
		defer unix.Close(vis)
	}
	for _, c := range s.cover {
		if err := mountCover(c); err != nil {
			return err
		}
	}
	if s.prepared, err = unix.Open("/proc/thread-self/ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
		return fmt.Errorf("open the namespace: %w", err)
	}
	if vis < 0 {
		return nil
	}
	if err := s.enter(s.visible, vis); err != nil {
		return fmt.Errorf("shared namespace: %w", err)
	}
	if s.shared, err = unix.Open("/proc/thread-self/ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
		return fmt.Errorf("open the shared namespace: %w", err)
	}
	return nil
}

// detach takes dir as a detached mount when a cover will hide it (-1:
// none), for a namespace to put back at its path.
func (s *sandbox) detach(dir string) (int, error) {
	if dir == "" || dir == "." {
		return -1, nil
	}
	for _, c := range s.cover {
		if within(dir, c) {
			fd, err := unix.OpenTree(unix.AT_FDCWD, dir, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
			if err != nil {
				return -1, fmt.Errorf("bind %s: %w", dir, err)
			}
			return fd, nil
		}
	}
	return -1, nil
}

func mountCover(c string) error {
	if err := unix.Mount("beluga-hidden", c, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC,
		"mode=0755,size=64k,nr_inodes=256"); err != nil {
		return fmt.Errorf("cover %s: %w", c, err)
	}
	return nil
}

// close lets the prepared namespace go (once no task's copy holds it).
func (s *sandbox) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.prepared >= 0 {
		unix.Close(s.prepared)
		s.prepared = -1
	}
	if s.shared >= 0 {
		unix.Close(s.shared)
		s.shared = -1
	}
}

// probe starts nothing in a namespace made for dir, as a task's would be.
func (s *sandbox) probe(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	_, err := s.start(dir, false, false, func() (*os.Process, error) { return nil, nil })
	return err
}

// start calls fork (which starts the task) on a forking thread, in a
// namespace of the task's own with dir visible, or with shared in the
// shared namespace (a task of a user of its own: taskusers.go). With
// groupWrite the task's umask is 002: the task users share a group, and a
// file one task leaves in a shared directory stays writable by the next
// (as when they were one user); its work dir is 0700 whatever the umask.
func (s *sandbox) start(dir string, shared, groupWrite bool, fork func() (*os.Process, error)) (*os.Process, error) {
	fd := -1
	if !shared {
		// The work dir is taken here, in the host's namespace, as a
		// detached mount; the forking thread puts it back at its own path.
		var err error
		if fd, err = s.detach(dir); err != nil {
			return nil, fmt.Errorf("task sandbox: %w", err)
		}
		if fd >= 0 {
			defer unix.Close(fd)
		}
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.prepared < 0 || (shared && s.shared < 0) {
		return nil, errors.New("task sandbox: closed")
	}
	var p *os.Process
	var err error
	perr := forkThreads.Do(func() {
		ns := s.prepared
		if shared {
			ns = s.shared
		}
		if err = unix.Setns(ns, unix.CLONE_NEWNS); err != nil {
			err = fmt.Errorf("enter the prepared namespace: %w", err)
			return
		}
		if !shared {
			if err = s.enter(dir, fd); err != nil {
				_ = unix.Setns(s.prepared, unix.CLONE_NEWNS)
				return
			}
		}
		if groupWrite {
			// This thread's own: the forking threads unshared their fs.
			defer unix.Umask(unix.Umask(0o002))
		}
		p, err = fork()
		if !shared {
			// Out of the task's copy, which now belongs to the task alone
			// (or to nothing, and goes). Only tidiness: the next fork here
			// enters its namespace first.
			_ = unix.Setns(s.prepared, unix.CLONE_NEWNS)
		}
	})
	if err == nil {
		err = perr
	}
	if err != nil {
		return p, fmt.Errorf("task sandbox: %w", err)
	}
	return p, nil
}

// enter moves the calling forking thread (in the prepared namespace) into a
// copy of it with the detached mount fd (of dir; -1: none) at dir.
func (s *sandbox) enter(dir string, fd int) error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("unshare mount namespace: %w", err)
	}
	if fd < 0 {
		return nil
	}
	// A fresh tmpfs over the shared cover: the directories leading to
	// dir are made in it, and seen by this task only.
	fresh := ""
	for _, c := range s.cover {
		if within(dir, c) {
			if err := mountCover(c); err != nil {
				return err
			}
			fresh = c
		}
	}
	if err := mkdirBelow(dir, fresh); err != nil {
		return fmt.Errorf("recreate %s: %w", dir, err)
	}
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, dir, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		return fmt.Errorf("mount %s: %w", dir, err)
	}
	return nil
}

// mkdirBelow makes the directories from the empty tmpfs at cover down to
// dir, mode 0755 whatever the umask: the tmpfs is fresh, so each is made
// without first looking whether it exists.
func mkdirBelow(dir, cover string) error {
	rest := strings.TrimPrefix(dir, cover+"/")
	if cover == "" || dir == cover || rest == dir {
		return nil // dir is the cover itself (or not under one): nothing to make
	}
	p := cover
	for _, part := range strings.Split(rest, "/") {
		p += "/" + part
		if err := unix.Mkdir(p, 0o755); err != nil && !errors.Is(err, unix.EEXIST) {
			return err
		}
		if err := unix.Chmod(p, 0o755); err != nil {
			return err
		}
	}
	return nil
}

// isolate settles who tasks run as and whether they are sandboxed, and
// says so once: as root, tasks that name no tenant run as Config.TaskUser
// in a sandbox; otherwise as the worker's user, which a warning names.
func (e *Executor) isolate() error {
	// Entered, never listed: a task reaches its own dir by its path only.
	for _, d := range []string{e.cfg.DataDir, e.logDir, e.workDir} {
		if err := os.Chmod(d, 0o711); err != nil {
			return fmt.Errorf("executor: chmod %s: %w", d, err)
		}
	}
	if e.cfg.sameUser {
		return nil
	}
	if e.cfg.TaskIsolation == "off" {
		e.isolation.Warning = "task isolation is off (" + TaskIsolationEnv + "): tasks run as the worker's own OS user (uid " +
			fmt.Sprint(os.Geteuid()) + ") with no sandbox, and can read what it can (its data dir, keys, process)"
		e.log.Warn("tasks are not isolated from the worker", zap.String("warning", e.isolation.Warning))
		return nil
	}
	if os.Geteuid() != 0 {
		e.isolation.RunsAsServer = true
		e.isolation.Warning = "the worker does not run as root: tasks run as its own OS user (uid " +
			fmt.Sprint(os.Geteuid()) + ") with no sandbox, and can read what it can (its data dir, keys, process); " +
			"non-admins' shell and python tasks are refused unless an admin sets tasks.allow_unsandboxed_code to 1"
		e.log.Warn("tasks are not isolated from the worker", zap.String("warning", e.isolation.Warning))
		return nil
	}
	u, made, err := ensureTaskUser(e.cfg.TaskUser)
	if err != nil {
		return fmt.Errorf("executor: %w", err)
	}
	if made {
		e.log.Info("made the OS user of tasks without a tenant", zap.String("task_user", u.name), zap.Int("uid", u.uid))
	}
	if u.uid == 0 || u.uid == os.Geteuid() {
		return fmt.Errorf("executor: task user %q is uid %d, the worker's own: name an unprivileged user", u.name, u.uid)
	}
	e.taskUser, e.isolation.TaskUser = u, u.name
	e.spares.forUser(u.uid, u.gid)
	// Said once here rather than as every python task's failure.
	if py, err := exec.LookPath(e.cfg.Python); err == nil {
		if why := reachable(py, u); why != "" {
			e.log.Warn("python tasks without a tenant will fail: set worker.python to an interpreter the task users can run",
				zap.String("python", py), zap.String("why", why))
		}
	}
	if !e.cfg.oneTaskUser {
		e.users = newTaskUsers(u, e.cfg.Slots, e.log)
	}
	hide := append([]string{e.cfg.DataDir}, e.cfg.Hide...)
	if e.sandbox, err = newSandbox(hide, e.workDir, filepath.Join(e.cfg.DataDir, ".sandbox-probe")); err != nil {
		e.isolation.Warning = "no task sandbox (" + err.Error() + "): tasks run as " + u.name +
			" and see the worker's process list (cmdline) and what file modes let other users read"
		e.log.Warn("tasks run without a sandbox", zap.String("warning", e.isolation.Warning))
		return nil
	}
	e.isolation.Sandbox = true
	e.log.Info("tasks are sandboxed", zap.String("task_user", u.name), zap.Strings("hidden", e.sandbox.cover))
	return nil
}

// Isolation says how tasks are kept from the worker (after Start).
func (e *Executor) Isolation() Isolation { return e.isolation }
