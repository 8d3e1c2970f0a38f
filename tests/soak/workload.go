package soak

import (
	"context"
	"fmt"
	"math/rand"
	"sync"
	"time"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/api/client"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
)

// cronJob is a workflow of one task on a schedule firing every few
// seconds, under one overlap policy.
type cronJob struct {
	name    string
	cron    string
	overlap model.Overlap
	work    string // the task's command: longer than the period for skip and replace to act
}

// The schedules: each overlap policy, with tasks long enough against the
// period that skip, wait and replace have something to decide at times.
var cronJobs = []cronJob{
	{"cron-allow", "*/3 * * * * *", model.OverlapAllow, "sleep 2"},
	{"cron-skip", "*/3 * * * * *", model.OverlapSkip, "sleep 4"},
	{"cron-wait", "*/4 * * * * *", model.OverlapWait, "sleep 2"},
	{"cron-replace", "*/4 * * * * *", model.OverlapReplace, "sleep 5"},
}

// The workflows the driver runs by hand.
const (
	wfChain  = "chain"
	wfFanout = "fanout"
	wfRetry  = "retry"
)

var manual = []string{wfChain, wfFanout, wfRetry}

// workflows are every workflow of the soak, their tasks wrapped to write
// the ledger.
func workflows(ledger string) []spec.Workflow {
	task := func(name, cmd string, deps ...string) spec.Task {
		return spec.Task{Name: name, Type: "shell", Command: Wrap(ledger, cmd), DependsOn: deps}
	}
	chain := spec.Workflow{Name: wfChain, Tasks: []spec.Task{
		task("a", "sleep 0.3"), task("b", "sleep 0.3", "a"), task("c", "sleep 0.3", "b"),
	}}
	fan := spec.Workflow{Name: wfFanout, Tasks: []spec.Task{task("root", "true")}}
	var leaves []string
	for i := 1; i <= 5; i++ {
		n := fmt.Sprintf("f%d", i)
		fan.Tasks = append(fan.Tasks, task(n, "sleep 1", "root"))
		leaves = append(leaves, n)
	}
	fan.Tasks = append(fan.Tasks, task("join", "true", leaves...))
	// The first attempt fails; the retry succeeds.
	flaky := task("flaky", `sleep 0.5; [ "$BELUGA_ATTEMPT" -gt 1 ]`)
	flaky.Retries, flaky.RetryInterval = 3, spec.Duration(time.Second)
	out := []spec.Workflow{chain, fan, {Name: wfRetry, Tasks: []spec.Task{flaky}}}
	for _, j := range cronJobs {
		out = append(out, spec.Workflow{Name: j.name, Tasks: []spec.Task{task("t", j.work)}})
	}
	return out
}

// scheduleRequest is job's schedule, on or off. Catchup all: the fire
// times no master led are fired by the next leader, so every fire time has
// a run or a counted skip.
func scheduleRequest(j cronJob, on bool) api.ScheduleRequest {
	return api.ScheduleRequest{Cron: j.cron, Catchup: "all", Overlap: string(j.overlap), Enabled: &on}
}

// driver starts a run of a random manual workflow every period until
// stopped; failed starts (the API down with the database) are counted.
type driver struct {
	client  *client.Client
	project string
	rng     *rand.Rand
	period  time.Duration

	mu              sync.Mutex
	started, failed int
	stop            chan struct{}
	done            chan struct{}
}

func startDriver(c *client.Client, project string, seed int64, period time.Duration) *driver {
	d := &driver{client: c, project: project, rng: rand.New(rand.NewSource(seed)), period: period,
		stop: make(chan struct{}), done: make(chan struct{})}
	go d.loop()
	return d
}

func (d *driver) loop() {
	defer close(d.done)
	tick := time.NewTicker(d.period)
	defer tick.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-tick.C:
		}
		wf := manual[d.rng.Intn(len(manual))]
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		_, err := d.client.Run(ctx, d.project, wf, client.RunOptions{})
		cancel()
		d.mu.Lock()
		if err != nil {
			d.failed++
		} else {
			d.started++
		}
		d.mu.Unlock()
	}
}

// Stop ends the driver and returns the runs started and the starts refused.
func (d *driver) Stop() (started, failed int) {
	close(d.stop)
	<-d.done
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.started, d.failed
}
