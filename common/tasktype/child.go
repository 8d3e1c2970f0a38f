package tasktype

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
)

// Child is a worker type whose attempt runs in a child process: the
// worker re-executes its own binary with the hidden subcommand
// ChildCommand(name) as the task's OS user, in the task's sandbox, with
// the task's work dir, log and kill path, as for a process type. What the
// child needs crosses on its stdin (never argv or the environment, which
// other processes of the same user may read); its log is its stdout and
// stderr; its outcome comes back on descriptor ChildResultFD.
type Child struct {
	// Input builds, in the worker, the bytes the child reads on stdin:
	// the payload and whatever secret the worker opened for it (the child
	// cannot read the worker's keys). An error fails the attempt with its
	// text, before any process starts.
	Input func(j Job) ([]byte, error)
	// Main is the child: it runs the attempt from its input, writing its
	// log to log, until it ends or ctx is done (SIGTERM: a kill or the
	// task's timeout).
	Main func(ctx context.Context, input []byte, log io.Writer) Outcome
	// Secrets, when set, names values of the input that the task's log
	// must never show (a password), masked as secret params are.
	Secrets func(input []byte) []string
}

// ChildResultFD is the child's descriptor on which it writes its
// ChildResult as JSON before it exits.
const ChildResultFD = 3

// ChildResult is a child's outcome as it crosses to the worker.
type ChildResult struct {
	Outputs map[string]string `json:"outputs,omitempty"`
	Error   string            `json:"error,omitempty"`
}

const childPrefix = "task-"

// ChildCommand is the hidden subcommand that runs type name's child.
func ChildCommand(name string) string { return childPrefix + name }

var childHooked atomic.Bool

// ChildAvailable says whether this binary's main calls MaybeRunChild, so
// that a worker may re-execute it for a Child type.
func ChildAvailable() bool { return childHooked.Load() }

// MaybeRunChild becomes a type's child and exits when the command line is
// `<binary> task-<name>` of a registered Child type; otherwise it returns
// and marks the binary as able to run children. A binary calls it in main
// after registering its types (and a test binary in TestMain).
func MaybeRunChild() {
	if len(os.Args) == 2 && len(os.Args[1]) > len(childPrefix) && os.Args[1][:len(childPrefix)] == childPrefix {
		if d, ok := Lookup(os.Args[1][len(childPrefix):]); ok && d.Child != nil {
			os.Exit(runChild(d))
		}
	}
	childHooked.Store(true)
}

// runChild reads the input, runs Main with SIGTERM and SIGINT cancelling
// it, and writes the result: 0 when the attempt succeeded, 1 when it
// failed, 2 when the child could not even say so.
func runChild(d *Def) int {
	result := os.NewFile(ChildResultFD, "result")
	if result == nil {
		fmt.Fprintf(os.Stderr, "beluga %s: no result descriptor %d: this command is run by a worker, not by hand\n", ChildCommand(d.Name), ChildResultFD)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	input, err := io.ReadAll(os.Stdin)
	var out Outcome
	if err != nil {
		out.Err = fmt.Errorf("read the task's input: %w", err)
	} else {
		out = d.Child.Main(ctx, input, os.Stdout)
	}
	res := ChildResult{Outputs: out.Outputs}
	if out.Err != nil {
		res.Outputs, res.Error = nil, out.Err.Error()
	}
	if err := json.NewEncoder(result).Encode(res); err != nil {
		fmt.Fprintf(os.Stderr, "beluga %s: write the result: %v\n", ChildCommand(d.Name), err)
		return 2
	}
	if res.Error != "" {
		return 1
	}
	return 0
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
