package clustertest

import "syscall"

// childAttr ties a beluga process to the test binary: its own process group
// (signals reach it and nothing else) and SIGKILL when the test dies.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
