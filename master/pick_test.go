package master

import (
	"context"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/registry"
)

func pickEnv(t *testing.T, sel Selector, nodes ...registry.Node) *dispatcher {
	reg := registry.NewMemory()
	for _, n := range nodes {
		n.Role = registry.RoleWorker
		if len(n.Groups) == 0 {
			n.Groups = []string{"default"}
		}
		reg.Register(context.Background(), n)
	}
	d := newDispatcher(zap.NewNop(), nil, reg, nil)
	d.selector = sel
	return d
}

func hb(cpu, mem float64, capacity int) registry.Heartbeat {
	return registry.Heartbeat{CPU: cpu, Memory: mem, Capacity: capacity}
}

func TestPickStrategies(t *testing.T) {
	t.Parallel()
	now := time.Now()
	t.Run("round_robin takes turns and skips full, overloaded and blacklisted workers", func(t *testing.T) {
		d := pickEnv(t, SelectRoundRobin,
			registry.Node{Addr: "a", Heartbeat: hb(10, 10, 2)},
			registry.Node{Addr: "b", Heartbeat: hb(10, 10, 2)},
			registry.Node{Addr: "c", Heartbeat: registry.Heartbeat{CPU: 50, Capacity: 2, Overloaded: true}},
			registry.Node{Addr: "hot", Heartbeat: hb(100, 100, 2)}, // busy host, but under no limit of its own
			registry.Node{Addr: "d", Heartbeat: hb(10, 10, 1)},
			registry.Node{Addr: "e", Heartbeat: hb(10, 10, 2), Groups: []string{"gpu"}})
		d.places.take(1, "d", "")
		d.places.take(2, "d", "") // d full: 2 x capacity 1
		d.blacklist["b"] = now.Add(time.Second)
		seen := map[string]int{}
		for i := 0; i < 4; i++ {
			got, _, _, _ := d.pick("default", false, now)
			seen[got]++
		}
		if seen["a"] != 2 || seen["hot"] != 2 {
			t.Fatalf("picks %v, want a and hot in turn (b blacklisted, c overloaded, d full)", seen)
		}
		if got, wait, none, _ := d.pick("default", false, now.Add(2*time.Second)); got == "" || wait != 0 || none {
			t.Fatalf("after the blacklist: %q %v %v", got, wait, none)
		}
		if got, _, none, _ := d.pick("etl", false, now); got != "" || !none {
			t.Fatalf("group with no worker: %q none=%v", got, none)
		}
	})
	t.Run("a worker with maxSendsPerWorker sends unanswered is skipped, not waited for", func(t *testing.T) {
		d := pickEnv(t, SelectRoundRobin,
			registry.Node{Addr: "hung", Heartbeat: hb(0, 0, 100)},
			registry.Node{Addr: "ok", Heartbeat: hb(0, 0, 100)})
		d.sending["hung"] = maxSendsPerWorker
		for i := 0; i < 3; i++ {
			if got, _, none, _ := d.pick("default", false, now); got != "ok" || none {
				t.Fatalf("pick %d: %q none=%v, want ok", i, got, none)
			}
		}
		d.sending["ok"] = maxSendsPerWorker
		if got, wait, none, _ := d.pick("default", false, now); got != "" || wait != 0 || none {
			t.Fatalf("both at the bound: %q %v none=%v, want a wait for a send to end", got, wait, none)
		}
	})
	t.Run("every worker busy: the reason says how", func(t *testing.T) {
		d := pickEnv(t, SelectRoundRobin,
			registry.Node{Addr: "o1", Heartbeat: registry.Heartbeat{Capacity: 2, Overloaded: true}},
			registry.Node{Addr: "o2", Heartbeat: registry.Heartbeat{Capacity: 2, Overloaded: true}},
			registry.Node{Addr: "f", Heartbeat: hb(0, 0, 1)})
		d.places.take(1, "f", "")
		d.places.take(2, "f", "")
		got, _, none, busy := d.pick("default", false, now)
		if got != "" || none {
			t.Fatalf("pick %q none=%v, want no worker", got, none)
		}
		if want := `waiting for a worker in group "default": every worker is busy (2 overloaded, 1 full)`; busy.reason("default") != want {
			t.Fatalf("reason %q, want %q", busy.reason("default"), want)
		}
	})
	t.Run("isolated skips workers whose tasks run as themselves", func(t *testing.T) {
		d := pickEnv(t, SelectRoundRobin,
			registry.Node{Addr: "shared", TasksRunAsServer: true, Heartbeat: hb(0, 0, 4)},
			registry.Node{Addr: "iso", Heartbeat: hb(0, 0, 4)})
		for i := 0; i < 4; i++ {
			if got, _, _, _ := d.pick("default", true, now); got != "iso" {
				t.Fatalf("isolated pick %d: %q", i, got)
			}
		}
		only := pickEnv(t, SelectRoundRobin, registry.Node{Addr: "shared", TasksRunAsServer: true, Heartbeat: hb(0, 0, 4)})
		got, _, none, busy := only.pick("default", true, now)
		if got != "" || none || !strings.Contains(busy.reason("default"), "tasks.allow_unsandboxed_code") {
			t.Fatalf("only a shared worker: %q none=%v reason %q", got, none, busy.reason("default"))
		}
		if got, _, _, _ := only.pick("default", false, now); got != "shared" {
			t.Fatalf("an admin's task: %q", got)
		}
	})
	t.Run("lower_weight takes the least loaded", func(t *testing.T) {
		d := pickEnv(t, SelectLowerWeight,
			registry.Node{Addr: "busy", Heartbeat: hb(80, 50, 4)},
			registry.Node{Addr: "idle", Heartbeat: hb(5, 20, 4)},
			registry.Node{Addr: "full-ish", Heartbeat: hb(5, 20, 4)})
		for i := int64(0); i < 6; i++ {
			d.places.take(i, "full-ish", "")
		}
		if got, _, _, _ := d.pick("default", false, now); got != "idle" {
			t.Fatalf("lower_weight picked %q", got)
		}
	})
	t.Run("random spreads over all usable workers", func(t *testing.T) {
		d := pickEnv(t, SelectRandom,
			registry.Node{Addr: "a", Heartbeat: hb(0, 0, 0)},
			registry.Node{Addr: "b", Heartbeat: hb(0, 0, 0)})
		seen := map[string]bool{}
		for i := 0; i < 200; i++ {
			got, _, _, _ := d.pick("default", false, now)
			seen[got] = true
		}
		if !seen["a"] || !seen["b"] || len(seen) != 2 {
			t.Fatalf("random picked %v", seen)
		}
	})
	if _, err := ParseSelector("fastest"); err == nil {
		t.Fatal("unknown selector accepted")
	}
}
