package clustertest

import (
	"fmt"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"syscall"
)

// runAs makes process name run as OS user u (Options.Users): its dir and
// the files every process reads (the cluster's secrets, handed to u: the
// other processes are root's) become u's, and the directories on the way
// to them and to the binary may be entered.
func (c *Cluster) runAs(name, u, bin string, files ...string) error {
	var p *Process
	for _, q := range c.Processes() {
		if q.Name == name {
			p = q
		}
	}
	if p == nil {
		return fmt.Errorf("Options.Users names %q, not a process of this cluster (master-N, worker-N, api)", name)
	}
	acct, err := user.Lookup(u)
	if err != nil {
		return fmt.Errorf("Options.Users: %w", err)
	}
	uid, err1 := strconv.Atoi(acct.Uid)
	gid, err2 := strconv.Atoi(acct.Gid)
	if err1 != nil || err2 != nil {
		return fmt.Errorf("Options.Users: user %s has uid %q gid %q", u, acct.Uid, acct.Gid)
	}
	for _, f := range append([]string{p.Dir}, files...) {
		if err := os.Chown(f, uid, gid); err != nil {
			return fmt.Errorf("Options.Users: %w", err)
		}
	}
	for _, d := range []string{c.Dir, filepath.Dir(bin)} {
		for ; d != "/" && d != "." && d != os.TempDir(); d = filepath.Dir(d) {
			if err := os.Chmod(d, 0o755); err != nil {
				return fmt.Errorf("Options.Users: %w", err)
			}
		}
	}
	p.cred = &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}
	return nil
}
