// Package procfs reads process state from Linux's /proc: whether a process
// lives (a zombie does not), which process group it is in, and its
// environment. The worker uses it to know when a task's whole group is gone
// and which processes are a task's; tests use it to check that no process
// outlived what should have killed it.
package procfs

import (
	"os"
	"strconv"
	"strings"
	"time"
)

// Group returns the process group of pid, and false when pid is gone or a
// zombie.
func Group(pid int) (int, bool) {
	f, ok := statFields(pid)
	if !ok || len(f) < 3 || f[0] == "Z" || f[0] == "X" {
		return 0, false
	}
	g, err := strconv.Atoi(f[2])
	if err != nil {
		return 0, false
	}
	return g, true
}

// statFields returns pid's /proc stat from its third field (state, ppid,
// pgrp, ...); false when pid is gone. The command name before them may hold
// spaces and parentheses: the fields start after the last ')'.
func statFields(pid int) ([]string, bool) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return nil, false
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return nil, false
	}
	return strings.Fields(string(b[i+1:])), true
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

// Environ returns pid's initial environment (NUL-separated). A read of a
// process in execve can come back empty: /proc/pid/environ reads the memory
// map of its open, which the exec drops, and the new map has no environment
// until the exec places it (stat's env_start is 0 meanwhile). So an empty
// read of a live user process is made again: while it is mid-exec, for at
// most execWait; else a few times, as a process may exec twice in a row
// (setsid sleep). Taking such a read for the process's environment let a
// task's setsid'd orphan escape its sweep about once in 500 runs.
func Environ(pid int) ([]byte, error) {
	name := "/proc/" + strconv.Itoa(pid) + "/environ"
	deadline := time.Now().Add(execWait)
	for empties := 0; ; empties++ {
		b, err := os.ReadFile(name)
		if err != nil || len(b) > 0 {
			return b, err
		}
		user, inExec := execState(pid)
		if !user || (!inExec && empties >= 4) || time.Now().After(deadline) {
			return b, nil // gone, a kernel thread, or its environment is empty
		}
		time.Sleep(100 * time.Microsecond) // an exec takes well under a millisecond
	}
}

// execWait bounds the wait for a process's exec to place its environment.
const execWait = time.Second

// execState reports whether pid is a live user process (neither a zombie,
// dead, nor a kernel thread) and whether it is in an exec with no
// environment mapped yet (env_start, stat's field 50, is 0; an empty
// environment still has one mapped).
func execState(pid int) (user, inExec bool) {
	f, ok := statFields(pid)
	const flags, envStart = 9 - 3, 50 - 3 // stat's fields 9 and 50, from field 3
	if !ok || len(f) <= envStart || f[0] == "Z" || f[0] == "X" {
		return false, false
	}
	if fl, err := strconv.ParseUint(f[flags], 10, 32); err != nil || fl&pfKthread != 0 {
		return false, false
	}
	return true, f[envStart] == "0"
}

// pfKthread is the kernel's PF_KTHREAD flag, in stat's flags field.
const pfKthread = 0x00200000
