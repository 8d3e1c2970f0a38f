package executor

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"
)

// spares keeps a few empty files and directories pre-created under
// DataDir/.spare. Starting a task then renames one of each into place (its
// log file and work dir) instead of creating them: on some disks allocating
// an inode costs close to a millisecond while a rename costs microseconds,
// and both sit on every task's start-up path. One refill goroutine creates
// new spares in the background; when the pool is empty a task simply
// creates its own.
type spares struct {
	dir      string
	recycled atomic.Int64  // names of recycled dirs
	dirMode  uint32        // the type and mode of a new dir (set by prepare)
	files    chan string   // paths of spare files, ready to take
	dirs     chan string   // paths of spare directories
	dirsLow  int           // dirs the refill keeps ready
	taken    chan struct{} // cap 1: a spare was taken, refill
	// The task user's pool (forUser): dirs (0700) already owned by it,
	// so that a task without a tenant, when the worker switches users,
	// neither creates nor chowns its dir on its start path. Never
	// recycled: a finished task's dir goes to no other task, whose
	// sandbox hides the others' dirs. (Logs are the worker's, 0600,
	// whoever the task runs as: they come from the pools above.)
	uid, gid int // 0: no task user
	userDirs chan string
	done     chan struct{} // closed when the refill goroutine returned
	log      *zap.Logger
}

// newSpares keeps n files and n/2 dirs ready. The dirs' pool also has room
// for the dirs of slots tasks in flight: a task returns its dir when it
// ends (recycle), and a pool too small to take it back (tasks ending
// together) leaves the dir in place while the refill makes a new one:
// with a pool of n, about every other task of a fan-out paid a mkdir.
func newSpares(dir string, n, slots int, log *zap.Logger) *spares {
	return &spares{
		dir:      dir,
		files:    make(chan string, n),
		dirs:     make(chan string, (n+1)/2+slots),
		dirsLow:  (n + 1) / 2,
		userDirs: make(chan string, n),
		taken:    make(chan struct{}, 1),
		done:     make(chan struct{}),
		log:      log,
	}
}

// prepare clears spares left by an earlier run (their names would clash).
func (s *spares) prepare() error {
	if err := os.RemoveAll(s.dir); err != nil {
		return err
	}
	if err := os.MkdirAll(s.dir, 0o755); err != nil {
		return err
	}
	spreadDirs(s.dir)
	// The mode new dirs get under this process's umask: what a recycled
	// dir must still have.
	var st unix.Stat_t
	if err := unix.Stat(s.dir, &st); err != nil {
		return err
	}
	s.dirMode = st.Mode
	return nil
}

// fsTopDirFl is FS_TOPDIR_FL (linux/fs.h), not in x/sys.
const fsTopDirFl = 0x00020000

// spreadDirs asks the file system to place dir's subdirectories as it
// places top-level ones (ext4's Orlov allocator: in block groups with many
// free inodes and few directories) rather than all in dir's own group.
// Every isolated task takes a new dir from here, and a group where many
// inodes were recently freed (temp files, purged work dirs) makes ext4
// scan past each of them on every mkdir: ~2-3x the kernel CPU of a mkdir
// measured on a busy machine (docs/performance.md). Best effort: other
// file systems refuse or ignore the flag.
func spreadDirs(dir string) {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return
	}
	defer unix.Close(fd)
	flags, err := unix.IoctlGetUint32(fd, unix.FS_IOC_GETFLAGS)
	if err != nil || flags&fsTopDirFl != 0 {
		return
	}
	_ = unix.IoctlSetPointerInt(fd, unix.FS_IOC_SETFLAGS, int(flags|fsTopDirFl))
}

// forUser keeps the task user's pools too; before run.
func (s *spares) forUser(uid, gid int) { s.uid, s.gid = uid, gid }

// run refills the pool until ctx ends, then removes the spare directory.
func (s *spares) run(ctx context.Context) {
	defer close(s.done)
	defer func() {
		if err := os.RemoveAll(s.dir); err != nil {
			s.log.Debug("remove spare dir", zap.Error(err))
		}
	}()
	seq := 0
	for {
		// Files and dirs are taken in pairs: refill them in pairs.
		// Dirs only to dirsLow: tasks that leave theirs empty return
		// them (recycle), and those fill the rest.
		for ctx.Err() == nil && (len(s.files) < cap(s.files) || len(s.dirs) < s.dirsLow) {
			seq++
			name := strconv.Itoa(seq)
			if len(s.files) < cap(s.files) {
				p := filepath.Join(s.dir, "f"+name)
				f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, logMode)
				if err != nil {
					s.log.Warn("create spare log file; tasks create their own", zap.Error(err))
					return
				}
				f.Close()
				s.files <- p // never blocks: only this goroutine sends
			}
			if len(s.dirs) < s.dirsLow {
				p := filepath.Join(s.dir, "d"+name)
				if err := os.Mkdir(p, 0o755); err != nil {
					s.log.Warn("create spare work dir; tasks create their own", zap.Error(err))
					return
				}
				select {
				case s.dirs <- p:
				default: // filled meanwhile by recycled dirs
					_ = os.Remove(p)
				}
			}
		}
		for ctx.Err() == nil && s.uid != 0 && len(s.userDirs) < cap(s.userDirs) {
			seq++
			if !s.refillUser(strconv.Itoa(seq)) {
				s.uid = 0 // tasks of the task user create and chown their own
				break
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-s.taken:
		}
	}
}

// refillUser adds one dir to the task user's pool, as that user's; false
// (logged) when it cannot.
func (s *spares) refillUser(name string) bool {
	p := filepath.Join(s.dir, "ud"+name)
	err := os.Mkdir(p, 0o700)
	if err == nil {
		err = os.Chown(p, s.uid, s.gid)
	}
	if err != nil {
		s.log.Warn("create the task user's spare work dir; its tasks create their own", zap.Error(err))
		return false
	}
	s.userDirs <- p
	return true
}

// makeUserDir is makeDir for the task user: owned reports that target
// came from its pool, its owner and mode already right.
func (s *spares) makeUserDir(target string) (owned bool, err error) {
	if s.take(s.userDirs, target) {
		return true, nil
	}
	return false, s.makeDir(target)
}

func (s *spares) signal() {
	select {
	case s.taken <- struct{}{}:
	default:
	}
}

// take moves a spare from pool to target. It returns false when the pool
// is empty or the rename failed (target exists, another file system...);
// the caller then creates target itself.
func (s *spares) take(pool chan string, target string) bool {
	var p string
	select {
	case p = <-pool:
	default:
		return false
	}
	s.signal()
	// NOREPLACE: an existing log (a duplicate after a restart) is appended
	// to, never replaced by an empty file.
	if err := unix.Renameat2(unix.AT_FDCWD, p, unix.AT_FDCWD, target, unix.RENAME_NOREPLACE); err != nil {
		_ = os.Remove(p)
		return false
	}
	return true
}

// replace puts an empty file at target, replacing what is there: a spare
// renamed over it, or a new file when the pool is empty.
func (s *spares) replace(target string) error {
	var p string
	select {
	case p = <-s.files:
		s.signal()
	default:
		f, err := os.CreateTemp(filepath.Dir(target), ".new-*")
		if err != nil {
			return err
		}
		f.Close()
		p = f.Name()
	}
	if err := os.Rename(p, target); err != nil {
		_ = os.Remove(p)
		return err
	}
	return nil
}

// openLog opens target for appending, from a spare when one is available.
func (s *spares) openLog(target string) (*os.File, error) {
	if s.take(s.files, target) {
		if f, err := os.OpenFile(target, os.O_WRONLY|os.O_APPEND, 0); err == nil {
			return f, nil
		}
	}
	return os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_APPEND, logMode)
}

// makeDir creates target (its parent exists), from a spare when one is
// available. An existing target is fine.
func (s *spares) makeDir(target string) error {
	if s.take(s.dirs, target) {
		return nil
	}
	if err := os.Mkdir(target, 0o755); err != nil && !os.IsExist(err) {
		return err
	}
	return nil
}

// recycle puts the work dir of a finished task back in the pool when the
// task left it as it got it, so the next task takes it with a rename
// instead of allocating an inode (about 150 µs of kernel CPU on some disks,
// the largest part of a short task's set-up). As it got it means empty,
// of the mode a new dir gets and without extended attributes (no ACL a task set would reach
// the next one). A dir that is not is kept in place, as every work dir was
// before. Only dirs of the worker's own user come here: a tenant's task
// owns its dir.
func (s *spares) recycle(dir string) bool { return s.keep(s.dirs, dir, s.dirMode, -1) }

// recycleInto is recycle for the work dir of a task that ran as a user of
// its own (taskusers.go): back into that user's pool when it is still the
// user's, 0700 and empty. Its processes are gone, so no descriptor of
// theirs reaches the next task that takes it.
func (s *spares) recycleInto(pool chan string, dir string, uid int) bool {
	return s.keep(pool, dir, unix.S_IFDIR|0o700, uid)
}

// keep moves dir into pool when it is pristine (pristine's mode and uid;
// uid -1: any).
func (s *spares) keep(pool chan string, dir string, mode uint32, uid int) bool {
	if len(pool) == cap(pool) || mode == 0 || !pristine(dir, mode, uid) {
		return false
	}
	p := filepath.Join(s.dir, "r"+strconv.FormatInt(s.recycled.Add(1), 10))
	if err := unix.Renameat2(unix.AT_FDCWD, dir, unix.AT_FDCWD, p, unix.RENAME_NOREPLACE); err != nil {
		return false
	}
	select {
	case pool <- p:
		return true
	default: // filled meanwhile: an empty dir is no loss
		_ = os.Remove(p)
		return false
	}
}

// pristine reports whether dir is an empty directory of type and mode
// mode (as Stat_t.Mode has them), owned by uid (-1: any), without extended
// attributes.
func pristine(dir string, mode uint32, uid int) bool {
	fd, err := unix.Open(dir, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC|unix.O_NOFOLLOW, 0)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil || st.Mode != mode || (uid >= 0 && int(st.Uid) != uid) {
		return false
	}
	if n, err := unix.Flistxattr(fd, nil); err != nil || n != 0 {
		return false
	}
	var buf [1024]byte
	for {
		n, err := unix.Getdents(fd, buf[:])
		if err != nil {
			return false
		}
		if n == 0 {
			return true
		}
		if _, _, names := syscall.ParseDirent(buf[:n], -1, nil); len(names) > 0 {
			return false // "." and ".." are left out
		}
	}
}
