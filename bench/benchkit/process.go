package benchkit

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/store"
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

// Standalone is a `beluga standalone` on a fresh SQLite file in a temp dir
// of its own: healthy, its store open, the bench token and the target's
// project "bench" made.
type Standalone struct {
	*Target
	Proc *Process
	Dir  string
}

// LaunchStandalone starts bin with the extra flags, in a temp dir named
// after prefix; Close undoes all of it.
func LaunchStandalone(bin, prefix string, extra ...string) (*Standalone, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, err
	}
	dbURL := "sqlite://" + filepath.Join(dir, "beluga.db")
	p, err := StartStandalone(bin, dir, dbURL, extra...)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	s := &Standalone{Target: NewTarget(p.Base, nil, "bench"), Proc: p, Dir: dir}
	if err := s.start(dbURL); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

// start waits for the API (the schema is made by then), opens the store,
// logs in and makes the project.
func (s *Standalone) start(dbURL string) error {
	if err := s.WaitHealthy(30 * time.Second); err != nil {
		return err
	}
	st, err := store.Open(context.Background(), dbURL, zap.NewNop())
	if err != nil {
		return err
	}
	s.Store = st
	if err := s.Authenticate(); err != nil {
		return err
	}
	return s.CreateProject()
}

// Close stops the process, closes the store and removes the temp dir.
func (s *Standalone) Close() {
	s.Proc.Stop()
	if s.Store != nil {
		s.Store.Close()
	}
	os.RemoveAll(s.Dir)
}
