// Package procfs reads process state from Linux's /proc: whether a process
// lives (a zombie does not) and which process group it is in. The worker
// uses it to know when a task's whole group is gone; tests use it to check
// that no process outlived what should have killed it.
package procfs

import (
	"os"
	"strconv"
	"strings"
)

// Group returns the process group of pid, and false when pid is gone or a
// zombie.
func Group(pid int) (int, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, false
	}
	// The command name may hold spaces and parentheses: fields start after
	// the last ')'. They are: state ppid pgrp ...
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 3 || f[0] == "Z" || f[0] == "X" {
		return 0, false
	}
	g, err := strconv.Atoi(f[2])
	if err != nil {
		return 0, false
	}
	return g, true
}

// Alive reports whether pid runs and is not a zombie.
func Alive(pid int) bool {
	_, ok := Group(pid)
	return ok
}

// GroupMembers lists the live processes of process group pgid.
func GroupMembers(pgid int) []int {
	entries, _ := os.ReadDir("/proc")
	var pids []int
	for _, en := range entries {
		pid, err := strconv.Atoi(en.Name())
		if err != nil {
			continue
		}
		if g, ok := Group(pid); ok && g == pgid {
			pids = append(pids, pid)
		}
	}
	return pids
}

// Gone reports whether none of pids still lives in group pgid.
func Gone(pgid int, pids []int) bool {
	for _, p := range pids {
		if g, ok := Group(p); ok && g == pgid {
			return false
		}
	}
	return true
}
