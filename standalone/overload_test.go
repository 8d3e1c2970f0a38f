package standalone_test

import (
	"context"
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/beluga-scheduler/beluga/common/config"
	"github.com/beluga-scheduler/beluga/standalone"
)

// hogs starts one `yes > /dev/null` per CPU, killed when the test ends (or
// by the returned stop).
func hogs(t *testing.T) (stop func()) {
	t.Helper()
	var cmds []*exec.Cmd
	for range runtime.NumCPU() {
		c := exec.Command("yes") // stdout nil: /dev/null
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, c)
	}
	stop = func() {
		for _, c := range cmds {
			_ = c.Process.Kill()
			_ = c.Wait()
		}
		cmds = nil
	}
	t.Cleanup(stop)
	return stop
}

const chainSpec = `name: chain
tasks:
  - {name: a, command: "true"}
  - {name: b, command: "true", depends_on: [a]}
  - {name: c, command: "true", depends_on: [b]}
`

// TestCPUHogsDoNotStopDispatch: beside a CPU hog on every core, a 3-task
// chain of true finishes in seconds with the default settings (overload
// protection off): slots bound a worker's load, not the host's CPU.
func TestCPUHogsDoNotStopDispatch(t *testing.T) {
	hogs(t)
	e := start(t, "")
	e.apply(chainSpec)
	// The first heartbeat samples an instant; wait for one that saw the hogs.
	var view struct {
		Workers []struct {
			CPU float64 `json:"cpu"`
		} `json:"workers"`
	}
	wait.Until(t, 20*time.Second, "a heartbeat with the host CPU at 95 % or more", func() bool {
		e.do("GET", "/api/v1/cluster", "", http.StatusOK, &view)
		return len(view.Workers) == 1 && view.Workers[0].CPU >= 95
	})
	began := time.Now()
	iv := e.wait(e.run("chain", nil), 15*time.Second)
	if iv.State != "succeeded" {
		t.Fatalf("chain %s: %+v", iv.State, iv.Tasks)
	}
	t.Logf("the chain finished in %v beside %d CPU hogs", time.Since(began).Round(time.Millisecond), runtime.NumCPU())
}

// TestCPUThresholdHoldsTasks: with worker.max_cpu_percent set low enough
// for the hogs to trip it, the worker's heartbeat marks it overloaded, the
// cluster view (API and UI) says so, and the chain waits with a reason
// naming it. (That it runs again once the host cools down is shown end to
// end, with CPU figures the test controls, by
// TestCPUThresholdReleasesTasksWhenIdle, and with injected heartbeats in
// master's TestOverloadedWorkerHoldsTasks and worker's
// TestPresenceReportsOverload: on a shared test host the CPU may stay busy
// after the hogs stop.)
func TestCPUThresholdHoldsTasks(t *testing.T) {
	hogs(t)
	c := config.Defaults()
	c.DataDir = t.TempDir()
	c.API.Listen = "127.0.0.1:0"
	c.Worker.MaxCPUPercent = 30
	sa, err := standalone.Start(context.Background(), c, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sa.Stop)
	e := &env{t: t, sa: sa, base: "http://" + sa.API.Addr(), dir: c.DataDir}
	e.do("POST", "/api/v1/projects", `{"name":"demo"}`, http.StatusCreated, nil)
	e.apply(chainSpec)

	var view struct {
		Workers []struct {
			Address    string `json:"address"`
			Overloaded bool   `json:"overloaded"`
		} `json:"workers"`
	}
	wait.Until(t, 15*time.Second, "the worker marked overloaded in the cluster view", func() bool {
		e.do("GET", "/api/v1/cluster", "", http.StatusOK, &view)
		return len(view.Workers) == 1 && view.Workers[0].Overloaded
	})
	b := newBrowser(t, e.base, e.sessionToken())
	b.step(t, 15*time.Second, func(s *session) {
		s.open("#/cluster")
		s.until("the overloaded tag with its reason", fmt.Sprintf(
			`document.querySelector('tr[data-worker=%s] .tag.overloaded')?.title.includes('CPU')`, js(view.Workers[0].Address)))
	})
	id := e.run("chain", nil)
	var inst struct {
		State  string `json:"state"`
		Reason string `json:"reason"`
	}
	wait.Until(t, 15*time.Second, "the instance's reason to name the overload", func() bool {
		e.do("GET", fmt.Sprintf("/api/v1/instances/%d", id), "", http.StatusOK, &inst)
		return strings.Contains(inst.Reason, "overloaded")
	})
	t.Logf("reason: %s", inst.Reason)
	if inst.State == "succeeded" {
		t.Fatalf("the chain ran on an overloaded worker")
	}
}

// fakeProc is a /proc for the worker's load sampler (stat, meminfo,
// loadavg) whose CPU figure the test sets. The sampler's CPU figure is the
// change of /proc/stat's counters between two reads, so stat is a FIFO
// served by a goroutine that advances the counters by the current shares
// at every read: a regular file rewritten on a timer could stay unchanged
// between two heartbeats and read as an idle CPU.
type fakeProc struct {
	dir  string
	mu   sync.Mutex
	busy int // ticks of the next read's 100 that are busy
	stop chan struct{}
	done chan struct{}
}

// newFakeProc serves CPU at busy % until set changes it, memory at 50 %
// and a load of 0.5. Stop the Standalone reading it first: a read of stat
// with nobody serving it blocks.
func newFakeProc(t *testing.T, busy int) *fakeProc {
	t.Helper()
	p := &fakeProc{dir: t.TempDir(), busy: busy, stop: make(chan struct{}), done: make(chan struct{})}
	for name, data := range map[string]string{
		"meminfo": "MemTotal: 1000000 kB\nMemFree: 100000 kB\nMemAvailable: 500000 kB\n",
		"loadavg": "0.50 0.40 0.30 1/100 12345\n",
	} {
		if err := os.WriteFile(filepath.Join(p.dir, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	stat := filepath.Join(p.dir, "stat")
	if err := syscall.Mkfifo(stat, 0o644); err != nil {
		t.Fatal(err)
	}
	go p.serve(stat)
	t.Cleanup(func() {
		close(p.stop)
		// Opening the read end lets serve's pending open return, so that it
		// sees stop.
		r, err := os.OpenFile(stat, os.O_RDONLY|syscall.O_NONBLOCK, 0)
		<-p.done
		if err == nil {
			r.Close()
		}
	})
	return p
}

func (p *fakeProc) serve(stat string) {
	defer close(p.done)
	var busy, idle uint64
	for {
		f, err := os.OpenFile(stat, os.O_WRONLY, 0) // waits for a reader
		if err != nil {
			return
		}
		select {
		case <-p.stop:
			f.Close()
			return
		default:
		}
		p.mu.Lock()
		busy += uint64(p.busy)
		idle += uint64(100 - p.busy)
		p.mu.Unlock()
		// user nice system idle iowait irq softirq steal guest guest_nice
		_, _ = fmt.Fprintf(f, "cpu  %d 0 0 %d 0 0 0 0 0 0\ncpu0 %d 0 0 %d 0 0 0 0 0 0\n", busy, idle, busy, idle)
		f.Close() // a reader gone meanwhile only loses this read
	}
}

// set makes the following reads show the CPU busy at percent.
func (p *fakeProc) set(percent int) {
	p.mu.Lock()
	p.busy = percent
	p.mu.Unlock()
}

// TestCPUThresholdReleasesTasksWhenIdle: the whole path (worker sampler,
// heartbeat, registry, master's dispatcher, API) with the host's CPU
// figures under the test's control. With worker.max_cpu_percent 50 and the
// CPU at 100 %, the worker is overloaded and a chain waits with the reason;
// at 45 % it stays overloaded (it leaves below 40 %); once the CPU is idle
// it takes tasks again, the chain succeeds with each task run once, and the
// instance's reason is cleared.
func TestCPUThresholdReleasesTasksWhenIdle(t *testing.T) {
	proc := newFakeProc(t, 100) // cleaned up after the Standalone stops
	c := config.Defaults()
	c.DataDir = t.TempDir()
	c.API.Listen = "127.0.0.1:0"
	c.Worker.MaxCPUPercent = 50
	sa, err := standalone.Start(context.Background(), c, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)),
		standalone.WithProcDir(proc.dir))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sa.Stop)
	e := &env{t: t, sa: sa, base: "http://" + sa.API.Addr(), dir: c.DataDir}
	e.do("POST", "/api/v1/projects", `{"name":"demo"}`, http.StatusCreated, nil)
	e.apply(chainSpec)

	type worker struct {
		CPU            float64 `json:"cpu"`
		Overloaded     bool    `json:"overloaded"`
		OverloadReason string  `json:"overload_reason"`
	}
	// heartbeat waits (they come every 3 s) for one at cpu percent.
	heartbeat := func(cpu float64) worker {
		t.Helper()
		var view struct {
			Workers []worker `json:"workers"`
		}
		wait.Until(t, 15*time.Second, fmt.Sprintf("a heartbeat with the CPU at %.0f %%", cpu), func() bool {
			view.Workers = nil // decoding into old elements keeps fields the answer omits
			e.do("GET", "/api/v1/cluster", "", http.StatusOK, &view)
			return len(view.Workers) == 1 && view.Workers[0].CPU == cpu
		})
		return view.Workers[0]
	}
	var inst struct {
		State  string     `json:"state"`
		Reason string     `json:"reason"`
		Tasks  []taskView `json:"tasks"`
	}
	if w := heartbeat(100); !w.Overloaded || !strings.Contains(w.OverloadReason, "CPU 100% >= max 50%") {
		t.Fatalf("at 100 %% CPU: %+v, want overloaded naming the CPU", w)
	}
	id := e.run("chain", nil)
	get := func() {
		t.Helper()
		inst.State, inst.Reason, inst.Tasks = "", "", nil // fields the answer omits stay empty
		e.do("GET", fmt.Sprintf("/api/v1/instances/%d", id), "", http.StatusOK, &inst)
	}
	held := func(when string) {
		t.Helper()
		get()
		for _, tk := range inst.Tasks {
			if tk.Host != "" || tk.State == "succeeded" {
				t.Fatalf("%s: task %s went to a worker: %+v", when, tk.Name, tk)
			}
		}
		if !strings.Contains(inst.Reason, "1 overloaded") {
			t.Fatalf("%s: instance %s, reason %q, want it waiting on the overloaded worker", when, inst.State, inst.Reason)
		}
	}

	wait.Until(t, 15*time.Second, "the instance's reason to name the overload", func() bool {
		get()
		return strings.Contains(inst.Reason, "overloaded")
	})
	t.Logf("reason: %s", inst.Reason)
	held("at 100 % CPU")

	proc.set(45)
	if w := heartbeat(45); !w.Overloaded || !strings.Contains(w.OverloadReason, "not yet below 40%") {
		t.Fatalf("at 45 %% CPU after 100 %%: %+v, want still overloaded (it leaves below 40 %%)", w)
	}
	held("at 45 % CPU")

	proc.set(0)
	if w := heartbeat(0); w.Overloaded || w.OverloadReason != "" {
		t.Fatalf("at an idle CPU: %+v, want no longer overloaded", w)
	}
	iv := e.wait(id, 15*time.Second)
	if iv.State != "succeeded" {
		t.Fatalf("chain %s once the CPU is idle: %+v", iv.State, iv.Tasks)
	}
	for _, name := range []string{"a", "b", "c"} {
		if n, tk := iv.count(name), iv.task(name); n != 1 || tk.Attempt != 1 || tk.State != "succeeded" {
			t.Errorf("task %s: %d instances, last %+v; want one attempt that succeeded", name, n, tk)
		}
	}
	get()
	if inst.Reason != "" {
		t.Errorf("reason %q after the chain ran, want it cleared", inst.Reason)
	}
}
