package executor

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// tenant is the OS user a task's process runs as.
type tenant struct {
	name     string
	uid, gid int
	cred     *syscall.Credential
}

// lookupTenant resolves name on this host. A user that does not exist is
// the task's failure, named, never a fallback to the worker's own user.
func lookupTenant(name string) (*tenant, error) {
	u, err := user.Lookup(name)
	if err != nil {
		var unknown user.UnknownUserError
		if errors.As(err, &unknown) {
			host, _ := os.Hostname()
			return nil, fmt.Errorf("tenant %q: no such OS user on worker host %s; create it there (useradd %s) or change the task's tenant", name, host, name)
		}
		return nil, fmt.Errorf("tenant %q: look up the OS user: %w", name, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("tenant %q: uid %q / gid %q are not numbers", name, u.Uid, u.Gid)
	}
	var groups []uint32
	if ids, err := u.GroupIds(); err == nil {
		for _, g := range ids {
			if n, err := strconv.ParseUint(g, 10, 32); err == nil {
				groups = append(groups, uint32(n))
			}
		}
	}
	return &tenant{name: name, uid: int(uid), gid: int(gid),
		cred: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid), Groups: groups}}, nil
}

// own gives the tenant the task's work dir (0700), so the task can write
// its files and no other user can open them; owned skips a dir that is the
// tenant's already (the task user's spares). The log stays the worker's
// (logMode).
func (t *tenant) own(dir string, owned bool) error {
	if owned {
		return nil
	}
	if err := os.Chown(dir, t.uid, t.gid); err != nil {
		return fmt.Errorf("tenant %q: hand %s over: %w", t.name, dir, err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("tenant %q: chmod %s: %w", t.name, dir, err)
	}
	return nil
}

// DefaultTaskUser is Config.TaskUser when empty.
const DefaultTaskUser = "beluga-task"

// ensureTaskUser returns the tenant of tasks that name none, making the
// OS user (a system user with a group of its own, no home, no login
// shell) when it does not exist. Only root calls it.
func ensureTaskUser(name string) (t *tenant, made bool, err error) {
	if t, err := lookupTenant(name); err == nil {
		return t, false, nil
	} else if _, lerr := user.Lookup(name); !errors.As(lerr, new(user.UnknownUserError)) {
		return nil, false, err
	}
	out, err := exec.Command("useradd", "--system", "--user-group", "--no-create-home",
		"--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", name).CombinedOutput()
	if err != nil {
		return nil, false, fmt.Errorf("task user %q does not exist and useradd failed (create it: useradd --system --user-group %s): %w: %s",
			name, name, err, strings.TrimSpace(string(out)))
	}
	t, err = lookupTenant(name)
	return t, true, err
}

// reachable says why the task user t could not run path ("" when it can):
// every directory on the way needs x, and the file x, for a user who is
// neither root nor their owner unless t is. A python3 that resolves into
// root's home (a pyenv shim under /root, 0700) is the usual case.
func reachable(path string, t *tenant) string {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return err.Error()
	}
	can := func(p string) bool {
		var st unix.Stat_t
		if unix.Stat(p, &st) != nil {
			return false
		}
		switch {
		case int(st.Uid) == t.uid:
			return st.Mode&0o100 != 0
		case int(st.Gid) == t.gid:
			return st.Mode&0o010 != 0
		}
		return st.Mode&0o001 != 0
	}
	for p := filepath.Dir(real); ; p = filepath.Dir(p) {
		if !can(p) {
			return p + " is not open to user " + t.name
		}
		if p == "/" {
			break
		}
	}
	if !can(real) {
		return real + " is not executable by user " + t.name
	}
	return ""
}
