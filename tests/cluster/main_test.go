// Package cluster holds Beluga's failover scenarios: real masters, workers,
// ZooKeeper and MariaDB processes (testkit/clustertest) that are killed,
// paused and restarted mid-workflow, with assertions on the DB and on the
// executions the tasks record. Scenarios run one after another: each
// starts a cluster of its own, and the machine is small.
package cluster

import (
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/testkit/clustertest"
)

func TestMain(m *testing.M) { os.Exit(clustertest.Main(m)) }

// Deadlines: a failover takes the 2 s session timeout plus recovery; the
// instance deadlines leave room for a loaded 2-core machine.
const (
	sessionTimeout = 2 * time.Second
	finishWithin   = 60 * time.Second
	failoverWithin = 30 * time.Second
)

// task is one task of a test workflow: it records its execution in the
// marker dir, then runs cmd.
func task(marks, name, cmd string, deps ...string) spec.Task {
	return spec.Task{Name: name, Command: clustertest.Marker(marks, cmd), DependsOn: deps}
}

// chain is a -> b -> ... of n tasks that each sleep for d.
func chain(marks, name string, n int, d time.Duration) spec.Workflow {
	wf := spec.Workflow{Name: name}
	for i := range n {
		var deps []string
		if i > 0 {
			deps = []string{fmt.Sprintf("t%d", i-1)}
		}
		wf.Tasks = append(wf.Tasks, task(marks, fmt.Sprintf("t%d", i), sleep(d), deps...))
	}
	return wf
}

// diamond is a -> (b, c) -> d, each task sleeping for d.
func diamond(marks, name string, d time.Duration) spec.Workflow {
	return spec.Workflow{Name: name, Tasks: []spec.Task{
		task(marks, "a", sleep(d)),
		task(marks, "b", sleep(d), "a"),
		task(marks, "c", sleep(d), "a"),
		task(marks, "d", sleep(d), "b", "c"),
	}}
}

// databases runs f on a cluster over each server database the masters can
// keep their state in (clustertest.Options.DB).
func databases(t *testing.T, f func(t *testing.T, db string)) {
	for _, db := range []string{"mysql", "postgres"} {
		t.Run(db, func(t *testing.T) { f(t, db) })
	}
}

func sleep(d time.Duration) string { return fmt.Sprintf("sleep %.3f", d.Seconds()) }
