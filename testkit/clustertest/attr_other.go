//go:build !linux

package clustertest

import "syscall"

// childAttr: without Pdeathsig the processes rely on Close/Cleanup.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
