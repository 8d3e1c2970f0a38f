// Package dirlock keeps two processes from sharing one data directory: a
// process holds an exclusive flock on DIR/beluga.lock for as long as it
// runs, with its pid and command line written in the file for the next one
// to name.
//
// The lock belongs to the open file, which is close-on-exec (Go opens every
// file so), so no child (task processes, the task guard) inherits it, and it
// is released by the kernel the moment the process dies, kill -9 included.
package dirlock

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// FileName is the lock file inside a data directory.
const FileName = "beluga.lock"

// HeldError says another live process holds the directory.
type HeldError struct {
	Dir    string
	Holder string // what the holder wrote: pid and command line; "" if not written yet
}

func (e *HeldError) Error() string {
	holder := e.Holder
	if holder == "" {
		holder = "a process that has not written its pid yet"
	}
	return fmt.Sprintf("data dir %s is in use by another process: %s; stop it or use another data dir", e.Dir, holder)
}

// Lock is a held data directory.
type Lock struct{ f *os.File }

// Acquire creates dir if needed and locks it, or returns a *HeldError
// naming the process that holds it.
func Acquire(dir string) (*Lock, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	path := filepath.Join(dir, FileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("data dir lock: %w", err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			b, _ := os.ReadFile(path)
			return nil, &HeldError{Dir: dir, Holder: strings.TrimSpace(string(b))}
		}
		return nil, fmt.Errorf("data dir lock %s: %w", path, err)
	}
	// Ours now: what an earlier holder wrote is stale.
	info := fmt.Sprintf("pid %d (%s), since %s\n", os.Getpid(), strings.Join(os.Args, " "), time.Now().UTC().Format(time.RFC3339))
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(info), 0) // only a hint for the next process
	}
	return &Lock{f: f}, nil
}

// Release unlocks the directory (the process exiting does the same). The
// pid line is left behind: the next holder overwrites it.
func (l *Lock) Release() {
	if l != nil && l.f != nil {
		_ = l.f.Close()
		l.f = nil
	}
}
