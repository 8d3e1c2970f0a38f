// Command beluga is the one Beluga binary: the long-running services
// (standalone, master, worker, api, db; server.go) and the CLI verbs that
// talk to the REST API (the other files).
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"
	_ "time/tzdata" // schedule time zones work on hosts without a zone database

	"github.com/beluga-scheduler/beluga/common/tasktype"
	"github.com/beluga-scheduler/beluga/tasks/builtin"
	"github.com/beluga-scheduler/beluga/worker"
)

func main() {
	// A worker re-executes this binary as its task guard: become it and
	// never return, before anything else runs.
	worker.MaybeRunGuard()
	// The task types this binary knows: the spec parser, master, worker
	// and API ask the registry.
	builtin.Register()
	// A worker re-executes this binary for a sql task (a hidden
	// subcommand, task-sql): become that task's process and exit.
	tasktype.MaybeRunChild()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one command line and returns the exit code; tests call it
// in-process. An interrupt or SIGTERM cancels the command's context.
func run(args []string, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return execute(ctx, args, os.Stdin, stdout, stderr)
}
