//go:build compose

// Package compose runs docker/docker-compose.yml as shipped: the image built
// from this checkout, the whole cluster up, the README's first workflow and
// every example on it, the leading master and a worker killed during runs,
// Prometheus' targets, and state kept across `down` and `up`. It needs a
// Docker engine and Compose (v2 `docker compose` or v1.29 `docker-compose`);
// `make compose-test` (scripts/compose-test.sh) prepares both and runs it:
//
//	go test -tags compose -count=1 -timeout 40m ./tests/compose/
package compose

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/api/client"
	"github.com/beluga-scheduler/beluga/common/model"
)

// cluster is one compose project of the test's own (its name, ports and
// volumes are not the user's).
type cluster struct {
	t          *testing.T
	root       string   // the repository
	composeCmd []string // the compose command and its file arguments
	env        []string
	services   []string // what `up` starts (Grafana only where its image exists)
	apiURL     string
	promURL    string
	cli        string // the host's beluga binary
	home       string // HOME of the CLI (its token)
	ledger     string // the host dir the tasks append to, outside Beluga
}

func TestComposeCluster(t *testing.T) {
	c := newCluster(t)
	t0 := time.Now()
	c.up()
	t.Logf("cluster healthy %s after up", time.Since(t0).Round(time.Second))
	c.noHealthWarnings()

	password := c.adminPassword()
	c.run("login", []byte(password+"\n"), "login", "-u", "admin")
	c.run("project", nil, "project", "create", "demo")

	// The README's first workflow, as it says.
	c.run("apply", nil, "workflow", "apply", "-f", filepath.Join(c.root, "examples/nightly.yaml"), "--project", "demo")
	out := c.run("first run", nil, "workflow", "run", "nightly_etl", "--project", "demo", "--param", "bizdate=20261129", "--wait")
	t.Logf("first workflow: %s", strings.TrimSpace(out))
	api := c.client(password)
	first := c.lastInstance(api, "nightly_etl")
	c.wantLogContains(api, first, "load", "3 orders, total 49")

	// Every example, each to success. task-types needs its datasource: the
	// cluster's own database, with the password of a compose secret.
	c.run("datasource", nil, "datasource", "set", "warehouse", "--type", "mysql", "--host", "db", "--port", "3306",
		"--database", "beluga", "--user", "beluga", "--password-file", filepath.Join(c.root, "docker/secrets/db-password"))
	c.run("datasource test", nil, "datasource", "test", "warehouse")
	// Every workflow in examples/ runs on the cluster; the X.test.yaml
	// beside one are its tests, run as the README says (no server).
	all, _ := filepath.Glob(filepath.Join(c.root, "examples/*.yaml"))
	var examples, tests []string
	for _, f := range all {
		if strings.HasSuffix(f, ".test.yaml") {
			tests = append(tests, f)
		} else {
			examples = append(examples, f)
		}
	}
	if len(examples) < 2 || len(tests) == 0 {
		t.Fatalf("examples: %v, their tests: %v", examples, tests)
	}
	t.Logf("examples' tests: %s", strings.TrimSpace(c.run("workflow test", nil, append([]string{"workflow", "test"}, tests...)...)))
	for _, ex := range examples {
		name := specName(t, ex)
		c.run("apply "+name, nil, "workflow", "apply", "-f", ex, "--project", "demo")
		c.run("run "+name, nil, "workflow", "run", name, "--project", "demo", "--wait")
		t.Logf("example %s: succeeded", filepath.Base(ex))
	}
	c.wantLogContains(api, c.lastInstance(api, "task_types"), "query", "84")

	// A schedule, to be found again after down/up (yearly: it does not fire).
	if _, _, err := api.PutSchedule(ctx(t), "demo", "nightly_etl", client.ScheduleRequest{Cron: "0 3 1 1 *", Timezone: "UTC"}); err != nil {
		t.Fatalf("schedule: %v", err)
	}

	// Faults during runs: each run finishes, each task ends once.
	c.run("apply probe", []byte(probeSpec), "workflow", "apply", "-f", "-", "--project", "demo")
	c.faultRun(api, "master", func() string { return c.leader(api) })
	c.faultRun(api, "worker", func() string { return c.busyWorker() })

	c.promTargetsUp(5)

	// State survives down and up (volumes kept).
	runs := c.instances(api)
	c.compose("down")
	t1 := time.Now()
	c.up()
	t.Logf("cluster healthy %s after down/up", time.Since(t1).Round(time.Second))
	api = c.client(password) // the same password logs in
	if got := c.instances(api); got != runs {
		t.Fatalf("after down/up: %d instances, want %d", got, runs)
	}
	if _, err := api.GetSchedule(ctx(t), "demo", "nightly_etl"); err != nil {
		t.Fatalf("after down/up: schedule: %v", err)
	}
	if _, err := api.GetWorkflow(ctx(t), "demo", "task_types", 0); err != nil {
		t.Fatalf("after down/up: workflow: %v", err)
	}
	c.wantLogContains(api, first, "load", "3 orders, total 49")
	t.Logf("whole test %s", time.Since(t0).Round(time.Second))
}

// probeSpec is the workflow the faults strike: six tasks of a few seconds
// side by side, then a join; each task writes its start and end to the ledger.
const probeSpec = `name: probe
tasks:
  - {name: t1, command: "/ledger/step 5"}
  - {name: t2, command: "/ledger/step 5"}
  - {name: t3, command: "/ledger/step 5"}
  - {name: t4, command: "/ledger/step 5"}
  - {name: t5, command: "/ledger/step 5"}
  - {name: t6, command: "/ledger/step 5"}
  - {name: join, command: "/ledger/step 0", depends_on: [t1, t2, t3, t4, t5, t6]}
`

// stepScript is /ledger/step: a task's start and end as ledger lines.
const stepScript = `#!/bin/bash
set -eu
line() { printf '%s %s %s %s %s\n' "$BELUGA_WORKFLOW_INSTANCE_ID" "$BELUGA_TASK_NAME" "$BELUGA_ATTEMPT" "$1" "$(cat /etc/hostname)" >> /ledger/log; }
line start
sleep "$1"
line end
`

func newCluster(t *testing.T) *cluster {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{t: t, root: root, home: t.TempDir()}
	bin := filepath.Join(t.TempDir(), "beluga")
	if out, err := exec.Command("go", "build", "-o", bin, filepath.Join(root, "cmd/beluga")).CombinedOutput(); err != nil {
		t.Fatalf("build the CLI: %v\n%s", err, out)
	}
	c.cli = bin

	// The ledger: a host dir every worker mounts, writable by the task user.
	c.ledger, err = os.MkdirTemp("", "beluga-compose-ledger-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(c.ledger) })
	if err := os.WriteFile(filepath.Join(c.ledger, "step"), []byte(stepScript), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.ledger, "log"), nil, 0o666); err != nil {
		t.Fatal(err)
	}
	_ = os.Chmod(c.ledger, 0o777)
	_ = os.Chmod(filepath.Join(c.ledger, "log"), 0o666)
	override := filepath.Join(t.TempDir(), "ledger.yml")
	if err := os.WriteFile(override, []byte(fmt.Sprintf(
		"services:\n  worker1:\n    volumes: [\"%[1]s:/ledger\"]\n  worker2:\n    volumes: [\"%[1]s:/ledger\"]\n", c.ledger)), 0o644); err != nil {
		t.Fatal(err)
	}

	cmd := strings.Fields(os.Getenv("BELUGA_COMPOSE"))
	if len(cmd) == 0 {
		if exec.Command("docker", "compose", "version").Run() == nil {
			cmd = []string{"docker", "compose"}
		} else {
			cmd = []string{"docker-compose"}
		}
	}
	project := "beluga-test"
	c.composeCmd = append(cmd, "-p", project, "-f", filepath.Join(root, "docker/docker-compose.yml"), "-f", override)
	apiPort, promPort, grafanaPort := freePort(t), freePort(t), freePort(t)
	c.env = append(os.Environ(), "BELUGA_API_PORT="+apiPort, "BELUGA_PROMETHEUS_PORT="+promPort, "BELUGA_GRAFANA_PORT="+grafanaPort)
	c.apiURL = "http://127.0.0.1:" + apiPort
	c.promURL = "http://127.0.0.1:" + promPort
	c.services = []string{"zookeeper", "db", "migrate", "master1", "master2", "worker1", "worker2", "api", "prometheus", "grafana"}
	if os.Getenv("BELUGA_COMPOSE_NO_GRAFANA") != "" {
		t.Logf("grafana/grafana has no image here (BELUGA_COMPOSE_NO_GRAFANA): the cluster runs without Grafana")
		c.services = c.services[:len(c.services)-1]
	}
	c.compose("down", "-v", "--remove-orphans") // a run killed before its cleanup
	t.Cleanup(func() {
		if t.Failed() {
			c.dumpLogs()
		}
		c.compose("down", "-v", "--remove-orphans")
	})
	return c
}

func (c *cluster) compose(args ...string) string {
	c.t.Helper()
	cmd := exec.Command(c.composeCmd[0], append(append([]string{}, c.composeCmd[1:]...), args...)...)
	cmd.Env = c.env
	cmd.Dir = c.root
	out, err := cmd.CombinedOutput()
	if err != nil {
		c.t.Fatalf("%s %s: %v\n%s", strings.Join(c.composeCmd, " "), strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (c *cluster) dumpLogs() {
	cmd := exec.Command(c.composeCmd[0], append(append([]string{}, c.composeCmd[1:]...), "logs", "--no-color", "--tail", "60")...)
	cmd.Env = c.env
	out, _ := cmd.CombinedOutput()
	c.t.Logf("compose logs (last 60 lines each):\n%s", out)
}

// up starts the services and waits until each long-running one is healthy
// and the migration has exited 0.
func (c *cluster) up() {
	c.t.Helper()
	c.compose(append([]string{"up", "-d", "--no-build"}, c.services...)...)
	wait.UntilErr(c.t, 6*time.Minute, "every service healthy and the migration done", func() error {
		states := map[string]string{}
		ready := true
		for _, s := range c.services {
			st := c.state(s)
			states[s] = st
			if s == "migrate" {
				if st != "exited 0" {
					ready = false
				}
			} else if st != "running healthy" {
				ready = false
			}
		}
		if !ready {
			return fmt.Errorf("states %v", states)
		}
		return nil
	})
}

// id is the container of a service (one replica each).
func (c *cluster) id(service string) string {
	c.t.Helper()
	return strings.TrimSpace(c.compose("ps", "-q", service))
}

// state is "running healthy", "exited 0", ... of a service's container.
func (c *cluster) state(service string) string {
	id := c.id(service)
	if id == "" {
		return "absent"
	}
	out, err := exec.Command("docker", "inspect", "-f",
		"{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{else}}{{.State.ExitCode}}{{end}}", id).Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

// noHealthWarnings: the health checks log nothing at WARN (they did every 5 s).
func (c *cluster) noHealthWarnings() {
	c.t.Helper()
	for _, s := range []string{"master1", "master2", "worker1", "worker2", "api"} {
		out, _ := exec.Command("docker", "logs", c.id(s)).CombinedOutput()
		for _, l := range strings.Split(string(out), "\n") {
			if strings.Contains(l, "unauthenticated") || strings.Contains(l, "bad magic") {
				c.t.Fatalf("%s logged a health check as a stranger: %s", s, l)
			}
		}
	}
}

func (c *cluster) adminPassword() string {
	b, err := os.ReadFile(filepath.Join(c.root, "docker/secrets/admin-password"))
	if err != nil {
		c.t.Fatalf("admin password (make compose-secrets): %v", err)
	}
	return strings.TrimSpace(string(b))
}

// run is the host's CLI against the cluster's API, as the README has it.
func (c *cluster) run(what string, stdin []byte, args ...string) string {
	c.t.Helper()
	cmd := exec.Command(c.cli, args...)
	cmd.Env = append(os.Environ(), "HOME="+c.home, "XDG_CONFIG_HOME="+filepath.Join(c.home, ".config"), "BELUGA_SERVER="+c.apiURL)
	cmd.Stdin = bytes.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if err != nil {
		c.t.Fatalf("%s: beluga %s: %v\n%s", what, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (c *cluster) client(password string) *client.Client {
	c.t.Helper()
	api := client.NewClient(c.apiURL, nil)
	var res client.LoginResponse
	var err error
	// The API may still be electing its view of the leader.
	if wait.Poll(30*time.Second, "a login as admin", func() bool {
		res, err = api.Login(ctx(c.t), "admin", password)
		return err == nil
	}) != nil {
		c.t.Fatalf("login as admin: %v", err)
	}
	return api.WithToken(res.Token)
}

func (c *cluster) lastInstance(api *client.Client, workflow string) int64 {
	c.t.Helper()
	l, err := api.ListInstances(ctx(c.t), client.InstanceFilter{Project: "demo", Workflow: workflow, Limit: 1})
	if err != nil || len(l.Items) == 0 {
		c.t.Fatalf("instances of %s: %v %v", workflow, l, err)
	}
	return l.Items[0].ID
}

func (c *cluster) instances(api *client.Client) int {
	c.t.Helper()
	l, err := api.ListInstances(ctx(c.t), client.InstanceFilter{Project: "demo", Limit: 1})
	if err != nil {
		c.t.Fatalf("instances: %v", err)
	}
	return int(l.Total)
}

// wantLogContains reads a task's log through the API (the worker serves it).
func (c *cluster) wantLogContains(api *client.Client, instance int64, task, want string) {
	c.t.Helper()
	d, err := api.GetInstance(ctx(c.t), instance)
	if err != nil {
		c.t.Fatalf("instance %d: %v", instance, err)
	}
	for _, ti := range d.Tasks {
		if ti.Name != task {
			continue
		}
		var b bytes.Buffer
		if _, err := api.TaskLog(ctx(c.t), ti.ID, 0, &b); err != nil {
			c.t.Fatalf("log of %s: %v", task, err)
		}
		if !strings.Contains(b.String(), want) {
			c.t.Fatalf("log of %s in instance %d lacks %q:\n%s", task, instance, want, b.String())
		}
		return
	}
	c.t.Fatalf("instance %d has no task %s", instance, task)
}

// leader is the service name of the leading master.
func (c *cluster) leader(api *client.Client) string {
	c.t.Helper()
	raw, err := api.Cluster(ctx(c.t))
	if err != nil {
		c.t.Fatalf("cluster: %v", err)
	}
	var v struct {
		Leader string `json:"leader"`
	}
	if err := json.Unmarshal(raw, &v); err != nil || v.Leader == "" {
		c.t.Fatalf("cluster: no leader in %s (%v)", raw, err)
	}
	return strings.SplitN(v.Leader, ":", 2)[0] // master1:5678 -> master1
}

// busyWorker is a worker running a probe task now (from the ledger).
func (c *cluster) busyWorker() string {
	c.t.Helper()
	open := map[string]string{} // instance task attempt -> container host
	for _, e := range c.readLedger() {
		k := e.instance + " " + e.task + " " + e.attempt
		if e.event == "start" {
			open[k] = e.host
		} else {
			delete(open, k)
		}
	}
	for _, host := range open {
		for _, w := range []string{"worker1", "worker2"} {
			if strings.HasPrefix(c.id(w), host) {
				return w
			}
		}
	}
	c.t.Fatalf("no worker is running a probe task: %v", open)
	return ""
}

type ledgerLine struct{ instance, task, attempt, event, host string }

func (c *cluster) readLedger() []ledgerLine {
	c.t.Helper()
	f, err := os.Open(filepath.Join(c.ledger, "log"))
	if err != nil {
		c.t.Fatal(err)
	}
	defer f.Close()
	var ls []ledgerLine
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p := strings.Fields(sc.Text())
		if len(p) != 5 {
			continue
		}
		ls = append(ls, ledgerLine{p[0], p[1], p[2], p[3], p[4]})
	}
	return ls
}

// faultRun runs the probe, kills (-9) the container target names once two
// of its tasks are running, and checks that the run succeeds and each task
// ended exactly once (a killed worker's tasks start again elsewhere).
func (c *cluster) faultRun(api *client.Client, what string, target func() string) {
	c.t.Helper()
	inst, err := api.Run(ctx(c.t), "demo", "probe", client.RunOptions{})
	if err != nil {
		c.t.Fatalf("run probe: %v", err)
	}
	id := strconv.FormatInt(inst.ID, 10)
	wait.Until(c.t, time.Minute, "two probe tasks running", func() bool {
		n := 0
		for _, e := range c.readLedger() {
			if e.instance == id && e.event == "start" {
				n++
			}
		}
		return n >= 2
	})
	victim := target()
	killed := time.Now()
	if out, err := exec.Command("docker", "kill", "-s", "KILL", c.id(victim)).CombinedOutput(); err != nil {
		c.t.Fatalf("kill %s: %v %s", victim, err, out)
	}
	c.t.Logf("%s fault: killed %s (-9) during run %d", what, victim, inst.ID)
	var state string
	wait.Until(c.t, 3*time.Minute, "the probe run to end", func() bool {
		d, err := api.GetInstance(ctx(c.t), inst.ID)
		if err != nil {
			return false // the API may be between leaders
		}
		state = string(d.State)
		st := model.WorkflowState(d.State)
		return st == model.WorkflowSucceeded || st == model.WorkflowFailed || st == model.WorkflowStopped
	})
	if state != string(model.WorkflowSucceeded) {
		c.t.Fatalf("%s fault: run %d ended %s", what, inst.ID, state)
	}
	ends := map[string]int{}
	starts := map[string]int{}
	for _, e := range c.readLedger() {
		if e.instance != id {
			continue
		}
		if e.event == "end" {
			ends[e.task]++
		} else {
			starts[e.task]++
		}
	}
	var names []string
	for _, n := range []string{"t1", "t2", "t3", "t4", "t5", "t6", "join"} {
		if ends[n] != 1 {
			c.t.Fatalf("%s fault: task %s ended %d times in run %d (ledger: starts %v, ends %v)", what, n, ends[n], inst.ID, starts, ends)
		}
		names = append(names, fmt.Sprintf("%s:%d", n, starts[n]))
	}
	sort.Strings(names)
	c.t.Logf("%s fault: run %d succeeded %s after the kill; starts per task %v", what, inst.ID, time.Since(killed).Round(time.Second), names)
	c.compose("start", victim)
	wait.Until(c.t, 3*time.Minute, victim+" healthy again", func() bool { return c.state(victim) == "running healthy" })
}

// promTargetsUp waits until Prometheus has scraped n targets, all up.
func (c *cluster) promTargetsUp(n int) {
	c.t.Helper()
	var last string
	if err := wait.Poll(2*time.Minute, fmt.Sprintf("%d Prometheus targets up", n), func() bool {
		resp, err := http.Get(c.promURL + "/api/v1/targets?state=active")
		if err != nil {
			last = err.Error()
			return false
		}
		defer resp.Body.Close()
		var v struct {
			Data struct {
				ActiveTargets []struct {
					ScrapeURL string `json:"scrapeUrl"`
					Health    string `json:"health"`
					LastError string `json:"lastError"`
				} `json:"activeTargets"`
			} `json:"data"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			last = err.Error()
			return false
		}
		up := 0
		var sb strings.Builder
		for _, tg := range v.Data.ActiveTargets {
			fmt.Fprintf(&sb, "%s=%s %s; ", tg.ScrapeURL, tg.Health, tg.LastError)
			if tg.Health == "up" {
				up++
			}
		}
		last = sb.String()
		return up == n && len(v.Data.ActiveTargets) == n
	}); err != nil {
		c.t.Fatalf("%v: %s", err, last)
	}
	c.t.Logf("Prometheus: %d targets up", n)
}

var nameLine = regexp.MustCompile(`(?m)^name:\s*(\S+)`)

func specName(t *testing.T, path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := nameLine.FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s has no top-level name", path)
	}
	return string(m[1])
}

func freePort(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return strconv.Itoa(ln.Addr().(*net.TCPAddr).Port)
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}
