package zktest

import "syscall"

// childAttr ties the server's life to the test binary: its own process group
// (so a kill reaches the JVM and nothing else) and SIGKILL when we die.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
