//go:build !linux

package zktest

import "syscall"

// childAttr: without Pdeathsig the server relies on Stop/Cleanup.
func childAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
