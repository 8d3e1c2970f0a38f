// Command bench measures a real `beluga standalone` process, on SQLite and on
// MariaDB, and prints figures: chain-100 wall and per-hop latency, fanout-1000
// throughput, run-to-first-task trigger latency, and RSS. It is run by
// `make bench`; it prints, it does not judge.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/internal/mariadbtest"
)

func main() {
	bin := flag.String("bin", "bin/beluga", "beluga binary")
	backends := flag.String("db", "sqlite,mysql", "comma-separated backends: sqlite, mysql")
	triggers := flag.Int("trigger-runs", 50, "runs for the trigger latency")
	slots := flag.Int("slots", 0, "worker slots (0: the worker default, 2 x CPUs)")
	flag.StringVar(&shell, "shell", "bash", "shell for tasks: bash or sh")
	flag.Parse()
	for _, b := range strings.Split(*backends, ",") {
		if err := benchBackend(strings.TrimSpace(b), *bin, *slots, *triggers); err != nil {
			fmt.Fprintf(os.Stderr, "bench %s: %v\n", b, err)
			os.Exit(1)
		}
	}
}

var shell string

type proc struct {
	cmd  *exec.Cmd
	base string
	st   *store.Store
}

func benchBackend(backend, bin string, slots, triggers int) error {
	dir, err := os.MkdirTemp("", "beluga-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	dbURL := "sqlite://" + filepath.Join(dir, "beluga.db")
	if backend == "mysql" {
		u, drop, err := mariadbtest.NewDatabase()
		if err != nil {
			return err
		}
		defer drop()
		dbURL = u
	}
	port, err := freePort()
	if err != nil {
		return err
	}
	cmd := exec.Command(bin, "standalone", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--data-dir", dir,
		"--db", dbURL, "--slots", strconv.Itoa(slots), "--shell", shell, "--log-level", "warn")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	p := &proc{cmd: cmd, base: fmt.Sprintf("http://127.0.0.1:%d", port)}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	if err := p.waitHealthy(30 * time.Second); err != nil {
		return err
	}
	if p.st, err = store.Open(context.Background(), dbURL, zap.NewNop()); err != nil {
		return err
	}
	defer p.st.Close()
	fmt.Printf("== %s (worker slots %d, shell %s)\n", backend, slots, shell)
	time.Sleep(time.Second) // let start-up garbage settle before the idle reading
	fmt.Printf("memory idle: RSS %.1f MB\n", rssMB(cmd.Process.Pid))
	if _, err := p.post("/api/v1/projects", `{"name":"bench"}`); err != nil {
		return err
	}
	for _, spec := range []string{chainSpec(100), fanoutSpec(1000), "name: one\ntasks:\n  - {name: t, command: \"true\"}\n"} {
		if _, err := p.put(spec); err != nil {
			return err
		}
	}
	// Warm-up run: first exec of the shell, prepared statements.
	if _, err := p.runAndWait("one"); err != nil {
		return err
	}

	inst, err := p.runAndWait("chain100")
	if err != nil {
		return err
	}
	tasks, err := p.st.ListTaskInstances(context.Background(), inst.ID)
	if err != nil {
		return err
	}
	sort.Slice(tasks, func(i, j int) bool { return num(tasks[i].Name) < num(tasks[j].Name) })
	var hops []time.Duration
	for i := 1; i < len(tasks); i++ {
		hops = append(hops, tasks[i].StartTime.Sub(*tasks[i-1].EndTime))
	}
	fmt.Printf("chain-100: wall %v, hop p50 %v p99 %v max %v (upstream end -> downstream start, DB times)\n",
		wall(inst).Round(time.Millisecond), pct(hops, 50), pct(hops, 99), pct(hops, 100))

	cpu0 := cpuTime(cmd.Process.Pid)
	inst, err = p.runAndWait("fanout1000")
	if err != nil {
		return err
	}
	w := wall(inst)
	fmt.Printf("fanout-1000: wall %v, %.0f tasks/s (1,001 tasks); beluga process CPU %v (%.0f µs/task), tasks' CPU not included\n",
		w.Round(time.Millisecond), 1001/w.Seconds(), (cpuTime(cmd.Process.Pid) - cpu0).Round(time.Millisecond),
		float64((cpuTime(cmd.Process.Pid)-cpu0).Microseconds())/1001)
	fmt.Printf("memory after fanout-1000: RSS %.1f MB\n", rssMB(cmd.Process.Pid))

	var trig []time.Duration
	for i := 0; i < triggers; i++ {
		t0 := time.Now()
		id, err := p.run("one")
		if err != nil {
			return err
		}
		inst, err := p.wait(id)
		if err != nil {
			return err
		}
		ts, err := p.st.ListTaskInstances(context.Background(), inst.ID)
		if err != nil || len(ts) != 1 || ts[0].StartTime == nil {
			return fmt.Errorf("trigger run %d: %v %+v", id, err, ts)
		}
		trig = append(trig, ts[0].StartTime.Sub(t0))
	}
	fmt.Printf("trigger (run request -> first task running) over %d runs: p50 %v p99 %v\n", triggers, pct(trig, 50), pct(trig, 99))
	return nil
}

func wall(inst model.WorkflowInstance) time.Duration { return inst.EndTime.Sub(inst.CreatedAt) }

func num(name string) int { n, _ := strconv.Atoi(strings.TrimLeft(name, "tf")); return n }

func pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), ds...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	i := (len(s)*p + 99) / 100
	if i < 1 {
		i = 1
	}
	return s[i-1].Round(10 * time.Microsecond)
}

func chainSpec(n int) string {
	var b strings.Builder
	b.WriteString("name: chain100\ntasks:\n")
	for i := 0; i < n; i++ {
		dep := ""
		if i > 0 {
			dep = fmt.Sprintf(", depends_on: [t%d]", i-1)
		}
		fmt.Fprintf(&b, "  - {name: t%d, command: \"true\"%s}\n", i, dep)
	}
	return b.String()
}

func fanoutSpec(n int) string {
	var b strings.Builder
	b.WriteString("name: fanout1000\ntasks:\n")
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("f%d", i)
		fmt.Fprintf(&b, "  - {name: %s, command: \"true\"}\n", names[i])
	}
	fmt.Fprintf(&b, "  - {name: join, command: \"true\", depends_on: [%s]}\n", strings.Join(names, ", "))
	return b.String()
}

func (p *proc) waitHealthy(within time.Duration) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		resp, err := http.Get(p.base + "/healthz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return fmt.Errorf("standalone not healthy after %v", within)
}

func (p *proc) post(path, body string) ([]byte, error) { return p.call("POST", path, body) }

func (p *proc) put(spec string) ([]byte, error) {
	name := strings.TrimSpace(strings.TrimPrefix(strings.SplitN(spec, "\n", 2)[0], "name:"))
	return p.call("PUT", "/api/v1/projects/bench/workflows/"+name, spec)
}

func (p *proc) call(method, path, body string) ([]byte, error) {
	req, _ := http.NewRequest(method, p.base+path, strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode >= 300 {
		return nil, fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, b)
	}
	return b, nil
}

func (p *proc) run(wf string) (int64, error) {
	b, err := p.post("/api/v1/projects/bench/workflows/"+wf+"/runs", "")
	if err != nil {
		return 0, err
	}
	var out struct{ ID int64 }
	return out.ID, json.Unmarshal(b, &out)
}

// wait reads the instance from the DB until it has finished.
func (p *proc) wait(id int64) (model.WorkflowInstance, error) {
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		inst, err := p.st.GetWorkflowInstance(context.Background(), id)
		if err != nil {
			return inst, err
		}
		if inst.State.Finished() {
			if inst.State != model.WorkflowSucceeded {
				return inst, fmt.Errorf("instance %d ended %s: %s", id, inst.State, inst.Reason)
			}
			return inst, nil
		}
		time.Sleep(5 * time.Millisecond)
	}
	return model.WorkflowInstance{}, fmt.Errorf("instance %d did not finish", id)
}

func (p *proc) runAndWait(wf string) (model.WorkflowInstance, error) {
	id, err := p.run(wf)
	if err != nil {
		return model.WorkflowInstance{}, err
	}
	return p.wait(id)
}

func rssMB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return float64(kb) / 1024
		}
	}
	return -1
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// cpuTime is the user+system CPU time of a process (its own threads, not
// its children), from /proc/PID/stat.
func cpuTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ is 100 on Linux
}
