package standalone_test

import (
	"context"
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/beluga-scheduler/beluga/common/config"
	"github.com/beluga-scheduler/beluga/standalone"
	"github.com/beluga-scheduler/beluga/testkit/metricstest"
)

// waitView is a task's wait as the API serves it.
type waitView struct {
	Cause    string     `json:"cause"`
	Reason   string     `json:"reason"`
	Upstream []string   `json:"upstream"`
	Ahead    *int       `json:"ahead"`
	RetryAt  *time.Time `json:"retry_at"`
}

type waitsDetail struct {
	State string `json:"state"`
	Tasks []struct {
		ID    int64     `json:"id"`
		Name  string    `json:"name"`
		State string    `json:"state"`
		Wait  *waitView `json:"wait"`
	} `json:"tasks"`
	Pending []struct {
		Name string   `json:"name"`
		Wait waitView `json:"wait"`
	} `json:"pending"`
}

// startWith starts a standalone whose config adjust changes.
func startWith(t *testing.T, adjust func(c *config.Config)) *env {
	t.Helper()
	c := config.Defaults()
	c.DataDir, c.API.Listen, c.Worker.Slots = t.TempDir(), "127.0.0.1:0", 4
	adjust(&c)
	sa, err := standalone.Start(context.Background(), c, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sa.Stop)
	e := &env{t: t, sa: sa, base: "http://" + sa.API.Addr(), dir: c.DataDir}
	e.do("POST", "/api/v1/projects", `{"name":"demo"}`, http.StatusCreated, nil)
	return e
}

// waitFor polls instance id's detail until task (a task name; a pending
// one too) has a wait of cause, and returns that wait.
func (e *env) waitFor(id int64, task, cause string) waitView {
	e.t.Helper()
	var got waitView
	wait.UntilErr(e.t, 30*time.Second, fmt.Sprintf("task %s of instance %d to wait on %s", task, id, cause), func() error {
		var last waitsDetail
		e.do("GET", fmt.Sprintf("/api/v1/instances/%d", id), "", http.StatusOK, &last)
		for _, tk := range last.Tasks {
			if tk.Name == task && tk.Wait != nil && tk.Wait.Cause == cause {
				var one struct{ Wait *waitView }
				e.do("GET", fmt.Sprintf("/api/v1/task-instances/%d", tk.ID), "", http.StatusOK, &one)
				if one.Wait == nil || one.Wait.Cause != cause {
					e.t.Fatalf("task %s: instance view waits on %s, task view on %+v", task, cause, one.Wait)
				}
				got = *tk.Wait
				return nil
			}
		}
		for _, p := range last.Pending {
			if p.Name == task && p.Wait.Cause == cause {
				got = p.Wait
				return nil
			}
		}
		return fmt.Errorf("%+v", last)
	})
	return got
}

func TestWaitUpstream(t *testing.T) {
	e := startWith(t, func(*config.Config) {})
	e.apply("name: up\ntasks:\n  - {name: a, command: \"sleep 30\"}\n  - {name: b, command: \"true\", depends_on: [a]}\n")
	id := e.run("up", nil)
	w := e.waitFor(id, "b", "upstream")
	if len(w.Upstream) != 1 || w.Upstream[0] != "a" || w.Reason != "waiting for upstream a" {
		t.Fatalf("b waits %+v", w)
	}
	e.act("instances", id, "stop", http.StatusAccepted)
}

func TestWaitNoWorker(t *testing.T) {
	e := startWith(t, func(*config.Config) {})
	e.apply("name: ghostly\ntasks:\n  - {name: a, command: \"true\", worker_group: ghost}\n")
	id := e.run("ghostly", nil)
	if w := e.waitFor(id, "a", "no_worker"); !strings.Contains(w.Reason, `group "ghost" (none registered)`) {
		t.Fatalf("a waits %+v", w)
	}
	e.act("instances", id, "stop", http.StatusAccepted)
}

// Every worker full: one slot takes two tasks in flight (queueFactor 2);
// the third waits for a worker, the worker counted full.
func TestWaitWorkersBusy(t *testing.T) {
	e := startWith(t, func(c *config.Config) { c.Worker.Slots = 1 })
	e.apply("name: busy\ntasks:\n  - {name: a, command: \"sleep 30\"}\n  - {name: b, command: \"sleep 30\"}\n  - {name: c, command: \"sleep 30\"}\n")
	id := e.run("busy", nil)
	wait.UntilErr(t, 30*time.Second, "a task to wait for busy workers", func() error {
		var d waitsDetail
		e.do("GET", fmt.Sprintf("/api/v1/instances/%d", id), "", http.StatusOK, &d)
		for _, tk := range d.Tasks {
			if tk.Wait != nil && tk.Wait.Cause == "workers_busy" {
				if !strings.Contains(tk.Wait.Reason, "every worker is busy (1 full)") {
					t.Fatalf("%s waits %+v", tk.Name, tk.Wait)
				}
				// The cluster view says the worker is skipped, and why.
				var cv struct {
					Workers []struct {
						Capacity   int    `json:"capacity"`
						FreeSlots  int    `json:"free_slots"`
						InFlight   int    `json:"in_flight"`
						Skipped    bool   `json:"skipped"`
						SkipReason string `json:"skip_reason"`
					} `json:"workers"`
				}
				e.do("GET", "/api/v1/cluster", "", http.StatusOK, &cv)
				if len(cv.Workers) != 1 || !cv.Workers[0].Skipped || cv.Workers[0].InFlight != 2 ||
					cv.Workers[0].SkipReason != "full: 2 tasks in flight for 1 slots (at most 2 x slots)" {
					t.Fatalf("cluster view %+v, want the worker skipped as full", cv.Workers)
				}
				return nil
			}
		}
		return fmt.Errorf("tasks %+v", d.Tasks)
	})
	e.act("instances", id, "stop", http.StatusAccepted)
}

func TestWaitTaskGroup(t *testing.T) {
	e := startWith(t, func(*config.Config) {})
	e.do("POST", "/api/v1/task-groups", `{"name":"narrow","capacity":1}`, http.StatusCreated, nil)
	e.apply("name: grouped\ntasks:\n  - {name: a, command: \"sleep 30\", task_group: narrow}\n  - {name: b, command: \"sleep 30\", task_group: narrow}\n")
	id := e.run("grouped", nil)
	wait.UntilErr(t, 30*time.Second, "a task to wait for the task group", func() error {
		var d waitsDetail
		e.do("GET", fmt.Sprintf("/api/v1/instances/%d", id), "", http.StatusOK, &d)
		for _, tk := range d.Tasks {
			if tk.Wait != nil && tk.Wait.Cause == "task_group" {
				if tk.Wait.Reason != `waiting for task group "narrow" (1 of 1 in use)` {
					t.Fatalf("%s waits %+v", tk.Name, tk.Wait)
				}
				return nil
			}
		}
		return fmt.Errorf("tasks %+v", d.Tasks)
	})
	// The leader's gauge of the group in use (set at most once a second).
	tok, err := os.ReadFile(e.sa.MetricsTokenFile)
	if err != nil {
		t.Fatal(err)
	}
	wait.UntilErr(t, 30*time.Second, "beluga_task_group_in_use{narrow} = 1", func() error {
		_, s, err := metricstest.Get(nil, e.base+"/metrics", strings.TrimSpace(string(tok)))
		if err != nil {
			t.Fatal(err)
		}
		if v := s.Value("beluga_task_group_in_use", "task_group=narrow"); v != 1 {
			return fmt.Errorf("it is %v", v)
		}
		return nil
	})
	e.act("instances", id, "stop", http.StatusAccepted)
}

func TestWaitPlatformCap(t *testing.T) {
	e := startWith(t, func(c *config.Config) { c.Master.MaxRunning = 1 })
	e.apply("name: capped\ntasks:\n  - {name: a, command: \"sleep 30\"}\n  - {name: b, command: \"sleep 30\"}\n")
	id := e.run("capped", nil)
	wait.UntilErr(t, 30*time.Second, "a task to wait for the platform cap", func() error {
		var d waitsDetail
		e.do("GET", fmt.Sprintf("/api/v1/instances/%d", id), "", http.StatusOK, &d)
		for _, tk := range d.Tasks {
			if tk.Wait != nil && tk.Wait.Cause == "platform" {
				if !strings.HasPrefix(tk.Wait.Reason, "waiting for a platform slot") {
					t.Fatalf("%s waits %+v", tk.Name, tk.Wait)
				}
				return nil
			}
		}
		return fmt.Errorf("tasks %+v", d.Tasks)
	})
	e.act("instances", id, "stop", http.StatusAccepted)
}

func TestWaitRetryAt(t *testing.T) {
	e := startWith(t, func(*config.Config) {})
	e.apply("name: flaky\ntasks:\n  - {name: a, command: \"exit 1\", retries: 1, retry_interval: 1h}\n")
	id := e.run("flaky", nil)
	w := e.waitFor(id, "a", "retry")
	var iv instanceView
	e.do("GET", fmt.Sprintf("/api/v1/instances/%d", id), "", http.StatusOK, &iv)
	var end time.Time
	for _, tk := range iv.Tasks {
		if tk.Attempt == 1 && tk.EndTime != nil {
			end = *tk.EndTime
		}
	}
	if w.RetryAt == nil || !w.RetryAt.Equal(end.Add(time.Hour)) || w.Reason != "retry at "+end.Add(time.Hour).Format(time.RFC3339) {
		t.Fatalf("retry wait %+v, want retry at %v (the failed attempt's end + 1h)", w, end.Add(time.Hour))
	}
	e.act("instances", id, "stop", http.StatusAccepted)
}
