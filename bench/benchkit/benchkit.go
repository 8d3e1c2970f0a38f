// Package benchkit holds what Beluga's benchmark programs share: driving a
// running Beluga through its REST API and reading the outcome from its
// database, the benchmark workflows, and the figures computed from DB times
// (percentiles, chain hops, process CPU and memory). The programs print;
// nothing here judges.
package benchkit

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/api/client"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/testkit/freeport"
)

// Target is a running Beluga: its REST API and its database.
type Target struct {
	API     *client.Client
	Store   *store.Store
	Project string
	// PollEvery is how often Wait reads the instance (0: every 5 ms). A
	// cluster bench reads less often: its database is the cluster's, and the
	// figures come from DB times, not from when the end is seen.
	PollEvery time.Duration
	base      string
}

// NewTarget returns a target for the API at base ("http://host:port") and
// the opened store; workflows live in project.
func NewTarget(base string, st *store.Store, project string) *Target {
	t := &Target{API: client.NewClient(base, nil), Store: st, Project: project, base: base}
	_ = t.authenticate() // the schema may not be there yet: WaitHealthy tries again
	return t
}

// authenticate gives the target's client a token of the admin user
// "bench", made in the database (with a password nobody knows) when
// missing: benchmarks measure scheduling, not logins.
func (t *Target) authenticate() error {
	if t.API.Token() != "" || t.Store == nil {
		return nil
	}
	ctx := context.Background()
	u, err := t.Store.UserGet(ctx, "bench")
	if err != nil {
		hash, herr := api.HashPassword(rand.Text())
		if herr != nil {
			return herr
		}
		if u, err = t.Store.UserCreate(ctx, "bench", model.RoleAdmin, hash); err != nil {
			return fmt.Errorf("make the bench user: %w", err)
		}
	}
	secret := "blg_" + rand.Text()
	if _, err := t.Store.TokenCreate(ctx, model.Token{UserID: u.ID, Kind: model.TokenPersonal, Name: "bench",
		Hash: store.HashToken(secret), ExpiresAt: time.Now().Add(24 * time.Hour)}); err != nil {
		return fmt.Errorf("make the bench token: %w", err)
	}
	t.API = t.API.WithToken(secret)
	return nil
}

// Authenticate gives the client its token once the target's store is set
// (a target made before its database had a schema).
func (t *Target) Authenticate() error { return t.authenticate() }

// WaitHealthy polls /healthz until it answers or within passes.
func (t *Target) WaitHealthy(within time.Duration) error {
	deadline := time.Now().Add(within)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := t.API.Health(ctx)
		cancel()
		if err == nil {
			return t.authenticate()
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("api not healthy after %v: %w", within, err)
		}
		time.Sleep(50 * time.Millisecond) // polling a starting process
	}
}

// CreateProject creates the target's project.
func (t *Target) CreateProject() error {
	_, err := t.API.CreateProject(context.Background(), t.Project, "benchmark")
	return err
}

// Apply stores a workflow spec (YAML or JSON) in the project.
func (t *Target) Apply(spec string) error {
	_, err := t.API.ApplyWorkflow(context.Background(), t.Project, []byte(spec))
	return err
}

// ApplyWithin applies spec allowing the request up to timeout (a spec of
// 100,000 tasks can take longer than the client's default on a loaded
// machine).
func (t *Target) ApplyWithin(spec string, timeout time.Duration) error {
	c := client.NewClient(t.base, &http.Client{Timeout: timeout}).WithToken(t.API.Token())
	_, err := c.ApplyWorkflow(context.Background(), t.Project, []byte(spec))
	return err
}

// Run starts a run of workflow wf and returns the instance id.
func (t *Target) Run(wf string) (int64, error) {
	inst, err := t.API.Run(context.Background(), t.Project, wf, client.RunOptions{})
	return inst.ID, err
}

// Wait reads the instance from the DB until it has finished; an instance
// that did not succeed is an error.
func (t *Target) Wait(id int64, within time.Duration) (model.WorkflowInstance, error) {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		inst, err := t.Store.InstanceGet(context.Background(), id)
		if err != nil {
			return inst, err
		}
		if inst.State.Finished() {
			if inst.State != model.WorkflowSucceeded {
				return inst, fmt.Errorf("instance %d ended %s: %s", id, inst.State, inst.Reason)
			}
			return inst, nil
		}
		every := t.PollEvery
		if every <= 0 {
			every = 5 * time.Millisecond
		}
		time.Sleep(every) // polling the DB: the end is seen within that

	}
	return model.WorkflowInstance{}, fmt.Errorf("instance %d did not finish within %v", id, within)
}

// RunAndWait runs wf and waits (up to 5 minutes) until it has succeeded.
func (t *Target) RunAndWait(wf string) (model.WorkflowInstance, error) {
	id, err := t.Run(wf)
	if err != nil {
		return model.WorkflowInstance{}, err
	}
	return t.Wait(id, 5*time.Minute)
}

// Tasks returns the task instances of an instance.
func (t *Target) Tasks(id int64) ([]model.TaskInstance, error) {
	return t.Store.TaskList(context.Background(), id)
}

// ChainSpec is a chain t0 -> t1 -> ... of n no-op shell tasks.
func ChainSpec(name string, n int) string { return TypedChainSpec(name, n, `command: "true"`) }

// TypedChainSpec is a chain t0 -> t1 -> ... of n tasks, each with the
// given fields (flow-style YAML, e.g. `type: python, command: "pass"`).
func TypedChainSpec(name string, n int, fields string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\ntasks:\n", name)
	for i := range n {
		dep := ""
		if i > 0 {
			dep = fmt.Sprintf(", depends_on: [t%d]", i-1)
		}
		fmt.Fprintf(&b, "  - {name: t%d, %s%s}\n", i, fields, dep)
	}
	return b.String()
}

// Runs are the run times (start to end, DB times) of the tasks.
func Runs(tasks []model.TaskInstance) []time.Duration {
	var out []time.Duration
	for _, t := range tasks {
		if t.StartTime != nil && t.EndTime != nil {
			out = append(out, t.EndTime.Sub(*t.StartTime))
		}
	}
	return out
}

// FanoutSpec is n independent no-op tasks f0..f<n-1> and a join after all.
func FanoutSpec(name string, n int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "name: %s\ntasks:\n", name)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("f%d", i)
		fmt.Fprintf(&b, "  - {name: %s, command: \"true\"}\n", names[i])
	}
	fmt.Fprintf(&b, "  - {name: join, command: \"true\", depends_on: [%s]}\n", strings.Join(names, ", "))
	return b.String()
}

// OneTaskSpec is a workflow of one no-op task.
func OneTaskSpec(name string) string {
	return fmt.Sprintf("name: %s\ntasks:\n  - {name: t, command: \"true\"}\n", name)
}

// Hops are the gaps of a chain from ChainSpec: upstream end to downstream
// start, DB times.
func Hops(tasks []model.TaskInstance) []time.Duration {
	ts := slices.Clone(tasks)
	slices.SortFunc(ts, func(a, b model.TaskInstance) int { return num(a.Name) - num(b.Name) })
	var hops []time.Duration
	for i := 1; i < len(ts); i++ {
		if ts[i].StartTime != nil && ts[i-1].EndTime != nil {
			hops = append(hops, ts[i].StartTime.Sub(*ts[i-1].EndTime))
		}
	}
	return hops
}

func num(name string) int { n, _ := strconv.Atoi(strings.TrimLeft(name, "tf")); return n }

// Wall is an instance's time from creation to end.
func Wall(inst model.WorkflowInstance) time.Duration {
	if inst.EndTime == nil {
		return 0
	}
	return inst.EndTime.Sub(inst.CreatedAt)
}

// Pct is the p-th percentile (nearest rank) of ds; 100 is the maximum.
func Pct(ds []time.Duration, p int) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := max((len(s)*p+99)/100, 1)
	return s[i-1].Round(10 * time.Microsecond)
}

// RSSMB is the resident memory of a process in MB, -1 when unknown.
func RSSMB(pid int) float64 { return statusMB(pid, "VmRSS:") }

// RSSSplit is a process's resident memory in MB by kind: private (anon:
// heap, stacks, the SQLite page caches) and file (mapped pages of the
// binary and libraries, shared with the page cache and dropped first
// under memory pressure).
func RSSSplit(pid int) (private, file float64) {
	return statusMB(pid, "RssAnon:"), statusMB(pid, "RssFile:")
}

// statusMB reads one kB field of /proc/PID/status in MB (-1: unknown).
func statusMB(pid int, field string) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(v), " kB"))
			return float64(kb) / 1024
		}
	}
	return -1
}

// ChildCPUTime is the user+system CPU time of a process's reaped children
// (for a worker: the tasks it ran and waited for), from /proc/PID/stat.
func ChildCPUTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseInt(f[13], 10, 64)
	st, _ := strconv.ParseInt(f[14], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ is 100 on Linux
}

// CPUTime is the user+system CPU time of a process (its own threads, not
// its children), from /proc/PID/stat.
func CPUTime(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * time.Second / 100 // USER_HZ is 100 on Linux
}

// FreePort returns a free port on 127.0.0.1.
func FreePort() (int, error) { return freeport.One() }

// Chain runs a workflow made by ChainSpec and returns its wall time and
// hops.
func (t *Target) Chain(wf string) (time.Duration, []time.Duration, error) {
	inst, err := t.RunAndWait(wf)
	if err != nil {
		return 0, nil, err
	}
	tasks, err := t.Tasks(inst.ID)
	if err != nil {
		return 0, nil, err
	}
	return Wall(inst), Hops(tasks), nil
}

// ChainLine renders Chain's figures.
func ChainLine(label string, wall time.Duration, hops []time.Duration) string {
	return fmt.Sprintf("%s: wall %v, hop p50 %v p99 %v max %v (upstream end -> downstream start, DB times)",
		label, wall.Round(time.Millisecond), Pct(hops, 50), Pct(hops, 99), Pct(hops, 100))
}

// FanoutLine renders the figures of a fan-out of n tasks.
func FanoutLine(label string, wall time.Duration, n int) string {
	return fmt.Sprintf("%s: wall %v, %.0f tasks/s (%d tasks)", label, wall.Round(time.Millisecond), float64(n)/wall.Seconds(), n)
}

// Workloads of known run times for the forecast's error: a chain of 1 s,
// 2 s and 1 s, and a fan-out whose longest branch is 0.5 s + 3 s + 0.5 s
// (bench/forecast measures them; standalone's forecast tests check them).
const (
	ForecastChainSpec = `name: chain
tasks:
  - {name: a, command: "sleep 1"}
  - {name: b, command: "sleep 2", depends_on: [a]}
  - {name: c, command: "sleep 1", depends_on: [b]}
`
	ForecastFanSpec = `name: fan
tasks:
  - {name: root, command: "sleep 0.5"}
  - {name: x1, command: "sleep 1", depends_on: [root]}
  - {name: x2, command: "sleep 2", depends_on: [root]}
  - {name: x3, command: "sleep 3", depends_on: [root]}
  - {name: x4, command: "sleep 1.5", depends_on: [root]}
  - {name: join, command: "sleep 0.5", depends_on: [x1, x2, x3, x4]}
`
)
