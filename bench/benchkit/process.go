package benchkit

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// Process is a beluga process started by a benchmark.
type Process struct {
	Cmd  *exec.Cmd
	Base string // REST API base URL
}

// StartStandalone runs `beluga standalone` on a free port with the data
// dir and database URL, plus extra flags; its output goes to stderr.
func StartStandalone(bin, dir, dbURL string, extra ...string) (*Process, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	args := append([]string{"standalone", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--data-dir", dir,
		"--db", dbURL, "--log-level", "warn"}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	return &Process{Cmd: cmd, Base: fmt.Sprintf("http://127.0.0.1:%d", port)}, nil
}

// Stop ends the process with SIGTERM and waits for it.
func (p *Process) Stop() {
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	_ = p.Cmd.Wait()
}
