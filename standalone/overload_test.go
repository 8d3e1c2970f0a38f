package standalone_test

import (
	"context"
	"fmt"
	"net/http"
	"os/exec"
	"runtime"
	"strings"
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
	waitUntil(t, 20*time.Second, "a heartbeat with the host CPU at 95 % or more", func() bool {
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
// naming it. (That it runs again once the host cools down is shown with
// injected heartbeats in master's TestOverloadedWorkerHoldsTasks and
// worker's TestPresenceReportsOverload: on a shared test host the CPU may
// stay busy after the hogs stop.)
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
	waitUntil(t, 15*time.Second, "the worker marked overloaded in the cluster view", func() bool {
		e.do("GET", "/api/v1/cluster", "", http.StatusOK, &view)
		return len(view.Workers) == 1 && view.Workers[0].Overloaded
	})
	b := newBrowser(t, e.base)
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
	waitUntil(t, 15*time.Second, "the instance's reason to name the overload", func() bool {
		e.do("GET", fmt.Sprintf("/api/v1/instances/%d", id), "", http.StatusOK, &inst)
		return strings.Contains(inst.Reason, "overloaded")
	})
	t.Logf("reason: %s", inst.Reason)
	if inst.State == "succeeded" {
		t.Fatalf("the chain ran on an overloaded worker")
	}
}

func waitUntil(t *testing.T, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", within, what)
		}
		time.Sleep(50 * time.Millisecond) // polling the API
	}
}
