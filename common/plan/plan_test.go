package plan

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
)

var (
	day  = time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC)
	wfA  = WF{"p", "a"}
	wfB  = WF{"p", "b"}
	wfC  = WF{"q", "c"} // another project
	wfD  = WF{"q", "d"}
	ok   = model.WorkflowSucceeded
	done = model.TaskSucceeded
)

// world: a (extract -> load) <- b (wait_a -> report) <- c (wait_b) <- d
// (wait_c); each a run a day, so only the same day's runs depend.
func world() Snapshot {
	chain := Workflow{Tasks: []Task{{Name: "extract"}, {Name: "load", Upstream: []string{"extract"}, Group: "g"}}}
	waiter := func(on WF) Workflow {
		return Workflow{Tasks: []Task{{Name: "wait", Deps: []Dep{{WF: on, Date: "today"}}}, {Name: "report", Upstream: []string{"wait"}}}}
	}
	inst := func(id int64, wf WF, def int64, base time.Time, tasks ...string) Instance {
		in := Instance{ID: id, WF: wf, Def: def, State: ok, Base: base, Loc: time.UTC}
		for _, t := range tasks {
			in.Tasks = append(in.Tasks, TaskNow{Name: t, State: done})
		}
		return in
	}
	return Snapshot{
		Instances: map[int64]Instance{
			1:  inst(1, wfA, 10, day, "extract", "load"),
			2:  inst(2, wfB, 20, day.Add(time.Hour), "wait", "report"),
			3:  inst(3, wfC, 30, day.Add(2*time.Hour), "wait", "report"),
			4:  inst(4, wfD, 40, day.Add(3*time.Hour), "wait", "report"),
			5:  inst(5, wfB, 20, day.AddDate(0, 0, 1), "wait", "report"), // the next day's: not waiting on 1
			11: inst(11, wfA, 10, day.AddDate(0, 0, -1), "extract", "load"),
		},
		Defs:   map[int64]Workflow{10: chain, 20: waiter(wfA), 30: waiter(wfB), 40: waiter(wfC)},
		Groups: map[string]Group{"g": {Capacity: 1, InUse: 0}},
		Estimates: map[WF]map[string]Estimate{
			wfA: {"extract": {P50: 10 * time.Second, P90: 20 * time.Second}, "load": {P50: 30 * time.Second, P90: 40 * time.Second}},
		},
	}
}

func ids(p Plan) string {
	var out []string
	for _, in := range p.Instances {
		var ts []string
		for _, t := range in.Tasks {
			ts = append(ts, t.Name)
		}
		out = append(out, fmt.Sprintf("%d@%d:%s[%s]", in.ID, in.Level, in.Action, strings.Join(ts, ",")))
	}
	return strings.Join(out, " ")
}

func TestMake(t *testing.T) {
	failed := func(s *Snapshot) {
		in := s.Instances[1]
		in.State = model.WorkflowFailed
		in.Tasks = []TaskNow{{Name: "extract", State: done}, {Name: "load", State: model.TaskFailed}}
		s.Instances[1] = in
	}
	for _, tc := range []struct {
		name   string
		req    Request
		change func(*Snapshot)
		want   string
		confl  []string // substrings of the conflicts, in order
		block  bool
	}{
		{name: "rerun alone", req: Request{model.ActionRerun, 1, None}, want: "1@0:rerun[extract,load]"},
		{name: "direct", req: Request{model.ActionRerun, 1, Direct}, want: "1@0:rerun[extract,load] 2@1:rerun[wait,report]"},
		{name: "all levels across projects", req: Request{model.ActionRerun, 1, All},
			want: "1@0:rerun[extract,load] 2@1:rerun[wait,report] 3@2:rerun[wait,report] 4@3:rerun[wait,report]"},
		{name: "recover_failed redoes the failed task and after", req: Request{model.ActionRecoverFailed, 1, Direct}, change: failed,
			want: "1@0:recover_failed[load] 2@1:rerun[wait,report]"},
		{name: "recover_failed of a succeeded run runs nothing of it", req: Request{model.ActionRecoverFailed, 1, None},
			want: "1@0:recover_failed[]"},
		{name: "cycle: a also waits on c", req: Request{model.ActionRerun, 1, All}, change: func(s *Snapshot) {
			d := s.Defs[10]
			d.Tasks = append(d.Tasks, Task{Name: "wait_c", Deps: []Dep{{WF: wfC, Date: "today"}}})
			s.Defs[10] = d
		}, want: "1@0:rerun[extract,wait_c,load] 2@1:rerun[wait,report] 3@2:rerun[wait,report] 4@3:rerun[wait,report]"},
		{name: "diamond: d waits on b and c, once", req: Request{model.ActionRerun, 1, All}, change: func(s *Snapshot) {
			s.Defs[40] = Workflow{Tasks: []Task{{Name: "wait", Deps: []Dep{{WF: wfC, Date: "today"}, {WF: wfB, Date: "today"}}}}}
		}, want: "1@0:rerun[extract,load] 2@1:rerun[wait,report] 3@2:rerun[wait,report] 4@2:rerun[wait]"},
		{name: "running root blocks", req: Request{model.ActionRerun, 1, None}, change: func(s *Snapshot) {
			in := s.Instances[1]
			in.State = model.WorkflowRunning
			s.Instances[1] = in
		}, want: "1@0:rerun[extract,load]", confl: []string{"instance 1 (p/a) is running"}, block: true},
		{name: "running dependent blocks", req: Request{model.ActionRerun, 1, Direct}, change: func(s *Snapshot) {
			in := s.Instances[2]
			in.State = model.WorkflowRunning
			s.Instances[2] = in
		}, want: "1@0:rerun[extract,load] 2@1:rerun[wait,report]", confl: []string{"instance 2 (p/b) is running", "fewer downstream levels"}, block: true},
		{name: "a waiting restart blocks", req: Request{model.ActionRerun, 1, None}, change: func(s *Snapshot) {
			in := s.Instances[1]
			in.Waiting = "a rerun request (command 7) is still waiting for the master"
			s.Instances[1] = in
		}, want: "1@0:rerun[extract,load]", confl: []string{"command 7"}, block: true},
		{name: "a paused schedule warns", req: Request{model.ActionRerun, 1, Direct}, change: func(s *Snapshot) {
			s.Paused = map[WF]bool{wfB: true}
		}, want: "1@0:rerun[extract,load] 2@1:rerun[wait,report]", confl: []string{"schedule of p/b is paused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := world()
			if tc.change != nil {
				tc.change(&s)
			}
			p, err := Make(tc.req, s)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(p); got != tc.want {
				t.Fatalf("plan %s\nwant %s", got, tc.want)
			}
			var all []string
			for _, c := range p.Conflicts {
				all = append(all, c.What)
			}
			joined := strings.Join(all, " | ")
			for _, w := range tc.confl {
				if !strings.Contains(joined, w) {
					t.Fatalf("conflicts %q lack %q", joined, w)
				}
			}
			if len(tc.confl) == 0 && len(all) != 0 {
				t.Fatalf("unexpected conflicts %q", joined)
			}
			if p.Blocked() != tc.block {
				t.Fatalf("blocked %v, want %v", p.Blocked(), tc.block)
			}
		})
	}
}

func TestMakeEstimatesAndWaits(t *testing.T) {
	s := world()
	s.Groups["g"] = Group{Capacity: 1, InUse: 1}
	s.Defs[10] = Workflow{Tasks: s.Defs[10].Tasks, MaxActiveRuns: 1}
	s.Running = map[WF]int{wfA: 1}
	p, err := Make(Request{model.ActionRerun, 1, Direct}, s)
	if err != nil {
		t.Fatal(err)
	}
	a, b := p.Instances[0], p.Instances[1]
	// a: extract 10s then load 30s; b: its wait ends with a, then wait (1m
	// default) and report (1m).
	if a.Estimate != (Estimate{40 * time.Second, 60 * time.Second}) {
		t.Fatalf("a %+v", a.Estimate)
	}
	if want := (Estimate{40*time.Second + 2*time.Minute, 60*time.Second + 4*time.Minute}); b.Estimate != want || p.Estimate != want {
		t.Fatalf("b %+v, whole %+v, want %+v", b.Estimate, p.Estimate, want)
	}
	if !slices.Equal(b.After, []int64{1}) || len(b.Tasks[0].Waits) != 1 || !strings.Contains(b.Tasks[0].Waits[0], "instance 1 (p/a)") {
		t.Fatalf("b after %v waits %v", b.After, b.Tasks[0].Waits)
	}
	if w := a.Tasks[1].Waits; len(w) != 1 || !strings.Contains(w[0], "task group g (1 slots, 1 in use") {
		t.Fatalf("load waits %v", w)
	}
	if len(a.Waits) != 1 || !strings.Contains(a.Waits[0], "max_active_runs 1 of p/a: 1 running") {
		t.Fatalf("a waits %v", a.Waits)
	}
	if !slices.Equal(p.Projects(), []string{"p"}) {
		t.Fatalf("projects %v", p.Projects())
	}
	// Its JSON round-trips (the store keeps it), estimates in seconds.
	b1, _ := json.Marshal(p)
	if !strings.Contains(string(b1), `"p50_seconds":160`) {
		t.Fatalf("json %s", b1)
	}
	var back Plan
	if err := json.Unmarshal(b1, &back); err != nil || back.Estimate != p.Estimate {
		t.Fatalf("round trip %+v %v", back.Estimate, err)
	}
}

func TestMakeRefuses(t *testing.T) {
	if _, err := Make(Request{model.ActionStop, 1, None}, world()); err == nil || !strings.Contains(err.Error(), "rerun and recover_failed") {
		t.Fatalf("stop: %v", err)
	}
	if _, err := Make(Request{model.ActionRerun, 99, None}, world()); err == nil {
		t.Fatal("missing instance planned")
	}
}

func TestParseDownstream(t *testing.T) {
	for in, want := range map[string]Downstream{"": None, "none": None, "direct": Direct, "all": All} {
		if got, err := ParseDownstream(in); err != nil || got != want {
			t.Fatalf("%q: %v %v", in, got, err)
		}
	}
	if _, err := ParseDownstream("some"); err == nil || !strings.Contains(err.Error(), "none, direct or all") {
		t.Fatalf("bad level: %v", err)
	}
}

func TestChanged(t *testing.T) {
	for _, tc := range []struct {
		was, now Facts
		want     []string
	}{
		{Facts{"a": "1"}, Facts{"a": "1"}, nil},
		{Facts{"instance 1 state": "succeeded"}, Facts{"instance 1 state": "running"}, []string{"instance 1 state: was succeeded, now running"}},
		{Facts{"x": "1", "y": "2"}, Facts{"y": "2", "z": "3"}, []string{"x: was 1, now gone", "z: new, 3"}},
	} {
		if got := Changed(tc.was, tc.now); !slices.Equal(got, tc.want) {
			t.Fatalf("Changed(%v, %v) = %q, want %q", tc.was, tc.now, got, tc.want)
		}
	}
}

// BenchmarkMake: a root of 1,000 tasks and 10 dependent workflows of 200
// candidate runs each (the snapshot's bound), every level followed.
func BenchmarkMake(b *testing.B) {
	s := Snapshot{Instances: map[int64]Instance{}, Defs: map[int64]Workflow{}}
	var root Workflow
	for i := range 1000 {
		t := Task{Name: fmt.Sprintf("t%d", i)}
		if i > 0 {
			t.Upstream = []string{fmt.Sprintf("t%d", i-1)}
		}
		root.Tasks = append(root.Tasks, t)
	}
	s.Defs[1] = root
	s.Instances[1] = Instance{ID: 1, WF: wfA, Def: 1, State: ok, Base: day, Loc: time.UTC}
	id := int64(2)
	for w := range 10 {
		on := wfA
		if w > 0 {
			on = WF{"p", fmt.Sprintf("w%d", w-1)}
		}
		s.Defs[int64(100+w)] = Workflow{Tasks: []Task{{Name: "wait", Deps: []Dep{{WF: on, Date: "today"}}}, {Name: "x", Upstream: []string{"wait"}}}}
		for r := range 200 {
			s.Instances[id] = Instance{ID: id, WF: WF{"p", fmt.Sprintf("w%d", w)}, Def: int64(100 + w), State: ok,
				Base: day.Add(-time.Duration(r) * time.Hour), Loc: time.UTC}
			id++
		}
	}
	b.ResetTimer()
	for range b.N {
		p, err := Make(Request{model.ActionRerun, 1, All}, s)
		if err != nil || len(p.Instances) < 11 {
			b.Fatalf("%d instances, %v", len(p.Instances), err)
		}
	}
}
