package mariadbtest

import "syscall"

// childAttr ties the server's life to the test binary.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
