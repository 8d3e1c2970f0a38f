package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/beluga-scheduler/beluga/api/client"
	"github.com/beluga-scheduler/beluga/bench/benchkit"
)

// benchTypes runs a chain of n no-ops of each task type (shell `true`,
// python `pass`, http GET of a server in this process, sql `select 1` on a
// SQLite datasource in dir) and prints, per
// type, the p50 hop (upstream end -> downstream start), the p50 run time
// of one task (start -> end) and the chain's wall per task, with the
// difference from shell: the type's overhead. A python no-op is mostly the
// interpreter's start (a pyenv shim on PATH adds a few hundred ms: see
// -python).
func benchTypes(p *benchkit.Target, n int, python, dir string) error {
	if python == "" {
		python = "python3"
	}
	py, err := exec.LookPath(python)
	if err != nil {
		return fmt.Errorf("python tasks: %w", err)
	}
	fmt.Printf("python tasks run %s\n", py)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}), ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln) //nolint:errcheck // ends with Close
	defer srv.Close()
	// The datasource's file lies outside the server's data dir (the sql task
	// refuses a file among the server's own) in a dir the task's user can
	// write: as root, tasks run as the task user, not as this process.
	dsDir, err := os.MkdirTemp(filepath.Dir(dir), "beluga-bench-datasource-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dsDir)
	if err := os.Chmod(dsDir, 0o777); err != nil {
		return err
	}
	lite := filepath.Join(dsDir, "bench-datasource.db")
	if err := os.WriteFile(lite, nil, 0o666); err != nil {
		return err
	}
	if err := os.Chmod(lite, 0o666); err != nil { // whatever the umask
		return err
	}
	if _, err := p.API.PutDatasource(context.Background(), "bench", client.DatasourceSpec{Type: "sqlite", Database: lite}); err != nil {
		return fmt.Errorf("sql tasks: datasource: %w", err)
	}
	types := []struct{ name, fields string }{
		{"shell", `command: "true"`},
		{"python", `type: python, command: "pass"`},
		{"http", fmt.Sprintf(`type: http, url: "http://%s/"`, ln.Addr())},
		{"sql", `type: sql, datasource: bench, sql: "select 1"`},
	}
	var shellPer time.Duration
	for _, ty := range types {
		wf := fmt.Sprintf("chain%d_%s", n, ty.name)
		if err := p.Apply(benchkit.TypedChainSpec(wf, n, ty.fields)); err != nil {
			return fmt.Errorf("%s: %w", ty.name, err)
		}
		inst, err := p.RunAndWait(wf)
		if err != nil {
			return fmt.Errorf("%s: %w", ty.name, err)
		}
		tasks, err := p.Tasks(inst.ID)
		if err != nil {
			return err
		}
		hops, runs := benchkit.Hops(tasks), benchkit.Runs(tasks)
		per := benchkit.Wall(inst) / time.Duration(n)
		beyond := ""
		if ty.name == "shell" {
			shellPer = per
		} else {
			d := (per - shellPer).Round(10 * time.Microsecond)
			sign := "+"
			if d < 0 {
				sign = ""
			}
			beyond = fmt.Sprintf(", %s%v per task beyond shell", sign, d)
		}
		fmt.Printf("type %-6s chain-%d no-op: hop p50 %v, run p50 %v, wall %v (%v per task%s)\n", ty.name, n,
			benchkit.Pct(hops, 50), benchkit.Pct(runs, 50), benchkit.Wall(inst).Round(time.Millisecond),
			per.Round(10*time.Microsecond), beyond)
	}
	return nil
}
