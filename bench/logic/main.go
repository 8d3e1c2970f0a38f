// Command logic measures the master-run logic tasks on a real `beluga
// standalone` (SQLite) and prints figures: the dependent wake-up latency
// (the upstream run's end committed -> the waiting dependent succeeded),
// p50 and p99, and the sub_workflow hop (the parent task's start -> the
// child's first task running), p50. Run by `make bench`; it prints, it
// does not judge.
package main

import (
	"flag"
	"fmt"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/beluga-scheduler/beluga/bench/benchkit"
	"github.com/beluga-scheduler/beluga/common/model"
)

func main() {
	bin := flag.String("bin", "bin/beluga", "beluga binary")
	n := flag.Int("runs", 30, "samples of each figure")
	flag.Parse()
	if err := bench(*bin, *n); err != nil {
		fmt.Fprintln(os.Stderr, "bench logic:", err)
		os.Exit(1)
	}
}

func bench(bin string, n int) error {
	sa, err := benchkit.LaunchStandalone(bin, "beluga-bench-logic-")
	if err != nil {
		return err
	}
	defer sa.Close()
	t := sa.Target
	fmt.Println("== logic tasks (SQLite)")
	wake, err := wakeUps(t, n)
	if err != nil {
		return err
	}
	fmt.Printf("dependent wake-up (upstream run ended -> dependent succeeded): p50 %v p99 %v (%d runs; check_interval 1h, so every one is a wake-up)\n",
		benchkit.Pct(wake, 50), benchkit.Pct(wake, 99), len(wake))
	hops, err := subHops(t, n)
	if err != nil {
		return err
	}
	fmt.Printf("sub_workflow hop (parent task start -> child's first task running): p50 %v p99 %v (%d runs)\n",
		benchkit.Pct(hops, 50), benchkit.Pct(hops, 99), len(hops))
	return nil
}

// wakeUps: for each sample a fresh upstream workflow, so the dependent is
// really waiting when the upstream ends.
func wakeUps(t *benchkit.Target, n int) ([]time.Duration, error) {
	var out []time.Duration
	for i := range n {
		up, down := fmt.Sprintf("up%d", i), fmt.Sprintf("down%d", i)
		if err := t.Apply(fmt.Sprintf("name: %s\ntasks:\n  - {name: a, command: \"true\"}\n", up)); err != nil {
			return nil, err
		}
		if err := t.Apply(fmt.Sprintf(`name: %s
tasks:
  - {name: wait, type: dependent, wait_for: [{workflow: %s, date: today}], check_interval: 1h}
`, down, up)); err != nil {
			return nil, err
		}
		id, err := t.Run(down)
		if err != nil {
			return nil, err
		}
		if err := waitTask(t, id, "wait", func(tk model.TaskInstance) bool { return strings.HasPrefix(tk.Message, "waiting") }); err != nil {
			return nil, err
		}
		u, err := t.RunAndWait(up)
		if err != nil {
			return nil, err
		}
		if _, err := t.Wait(id, time.Minute); err != nil {
			return nil, err
		}
		tasks, err := t.Tasks(id)
		if err != nil || len(tasks) != 1 || tasks[0].EndTime == nil || u.EndTime == nil {
			return nil, fmt.Errorf("dependent %d: %v %+v", id, err, tasks)
		}
		out = append(out, tasks[0].EndTime.Sub(*u.EndTime))
	}
	return out, nil
}

func subHops(t *benchkit.Target, n int) ([]time.Duration, error) {
	if err := t.Apply("name: kid\ntasks:\n  - {name: a, command: \"true\"}\n"); err != nil {
		return nil, err
	}
	if err := t.Apply("name: parent\ntasks:\n  - {name: child, type: sub_workflow, workflow: kid}\n"); err != nil {
		return nil, err
	}
	var out []time.Duration
	for range n {
		inst, err := t.RunAndWait("parent")
		if err != nil {
			return nil, err
		}
		ps, err := t.Tasks(inst.ID)
		if err != nil || len(ps) != 1 || ps[0].ChildInstanceID == 0 || ps[0].StartTime == nil {
			return nil, fmt.Errorf("parent %d: %v %+v", inst.ID, err, ps)
		}
		cs, err := t.Tasks(ps[0].ChildInstanceID)
		if err != nil || len(cs) == 0 {
			return nil, fmt.Errorf("child %d: %v", ps[0].ChildInstanceID, err)
		}
		sort.Slice(cs, func(i, j int) bool { return cs[i].ID < cs[j].ID })
		if cs[0].StartTime == nil {
			return nil, fmt.Errorf("child %d: first task has no start", ps[0].ChildInstanceID)
		}
		out = append(out, cs[0].StartTime.Sub(*ps[0].StartTime))
	}
	return out, nil
}

func waitTask(t *benchkit.Target, id int64, name string, ok func(model.TaskInstance) bool) error {
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		tasks, err := t.Tasks(id)
		if err != nil {
			return err
		}
		for _, tk := range tasks {
			if tk.Name == name && ok(tk) {
				return nil
			}
		}
		time.Sleep(2 * time.Millisecond) // polling the DB
	}
	return fmt.Errorf("task %s of instance %d: not there within a minute", name, id)
}
