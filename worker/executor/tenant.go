package executor

import (
	"errors"
	"fmt"
	"os"
	"os/user"
	"strconv"
	"syscall"
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

// own gives the tenant the task's work dir and log, so the task can write
// its files and read its own log.
func (t *tenant) own(paths ...string) error {
	for _, p := range paths {
		if err := os.Chown(p, t.uid, t.gid); err != nil {
			return fmt.Errorf("tenant %q: hand %s over: %w", t.name, p, err)
		}
	}
	return nil
}
