package soak

import (
	"fmt"
	"math/rand"
	"os"
	"time"

	"github.com/beluga-scheduler/beluga/testkit/clustertest"
	"github.com/beluga-scheduler/beluga/testkit/zktest"
)

// Kind is a kind of fault.
type Kind string

// The faults, one at a time. Every master and worker reaches ZooKeeper,
// the database and its peers through a proxy of its own link, which a
// partition turns into a black hole (bytes dropped, connections kept) and
// which can add latency.
const (
	KillLeader      Kind = "kill-leader"         // kill -9, restarted after a few seconds
	KillWorker      Kind = "kill-worker"         // kill -9, restarted after a few seconds
	KillZK          Kind = "kill-zookeeper"      // kill -9, restarted on its data
	KillDB          Kind = "kill-mariadb"        // kill -9, restarted on its data
	StopLeader      Kind = "stop-leader"         // SIGSTOP past its session, then SIGCONT
	CutMasterZK     Kind = "cut-leader-zk"       // the leader from ZooKeeper only, past its session
	CutWorkerMaster Kind = "cut-worker-inbound"  // the masters' connections to one worker
	CutWorkerOut    Kind = "cut-worker-outbound" // one worker's connections to the masters
	CutMasterDB     Kind = "cut-leader-db"       // the leader from the database only
	CutWorkerZK     Kind = "cut-worker-zk"       // a worker from ZooKeeper (with resets), for less than its session
	SlowDB          Kind = "slow-db"             // latency on every master's database link
	StepClock       Kind = "step-leader-clock"   // the leader's clock (its scheduler's and state wheel's) stepped, then back
)

// Kinds lists every fault kind, in the order the RNG picks from.
var Kinds = []Kind{KillLeader, KillWorker, KillZK, KillDB, StopLeader, CutMasterZK, CutWorkerMaster, CutMasterDB, SlowDB, CutWorkerZK,
	CutWorkerOut, StepClock}

// Fault is one fault as it happened.
type Fault struct {
	Kind   Kind
	Target string        // the process, or zookeeper / mariadb
	Detail string        // e.g. the latency
	Start  time.Time     // injected
	Healed time.Time     // undone (restarted, continued, reconnected)
	Ready  time.Time     // the cluster whole again; zero if it never was
	Hold   time.Duration // how long the fault lasted
	Gap    time.Duration // the longest time no master led, from Start to Ready
	// Change is the time from Start to a leader in a new term, when the
	// term changed before Ready.
	Change  time.Duration
	Changed bool
	// Cut counts the executions cut short and failed over (Interrupted)
	// that were running when the fault began or started during it.
	Cut int
	Err string // the cluster did not recover
}

// plan is a fault's decisions, drawn from the RNG before it is injected
// so that a seed gives the same sequence whatever the cluster does.
type plan struct {
	kind   Kind
	hold   time.Duration
	worker int           // for worker faults
	delay  time.Duration // for slow-db
	step   time.Duration // for step-leader-clock
}

// deck deals the fault kinds in rounds: each round is every kind once, in
// an order the RNG shuffles, so that a short soak meets every kind.
type deck struct {
	rng  *rand.Rand
	left []Kind
}

func (d *deck) next() Kind {
	if len(d.left) == 0 {
		d.left = append([]Kind(nil), Kinds...)
		d.rng.Shuffle(len(d.left), func(i, j int) { d.left[i], d.left[j] = d.left[j], d.left[i] })
	}
	k := d.left[0]
	d.left = d.left[1:]
	return k
}

// nextPlan draws the next fault. Faults that must outlast a session hold
// for it plus 2 s; a worker's ZooKeeper blip for 3/4 of the session, which
// must disturb nothing; the others for 2 to 6 s, slow-db for 10 to 20 s.
func nextPlan(rng *rand.Rand, d *deck, session time.Duration) plan {
	p := plan{kind: d.next(), worker: rng.Intn(2)}
	short := 2*time.Second + time.Duration(rng.Int63n(int64(4*time.Second)))
	p.delay = 20*time.Millisecond + time.Duration(rng.Int63n(int64(130*time.Millisecond)))
	p.step = 5*time.Second + time.Duration(rng.Int63n(int64(25*time.Second)))
	if rng.Intn(2) == 0 {
		p.step = -p.step
	}
	switch p.kind {
	case StopLeader, CutMasterZK:
		p.hold = session + 2*time.Second
	case CutWorkerZK:
		p.hold = session * 3 / 4
	case SlowDB, StepClock:
		p.hold = 10*time.Second + time.Duration(rng.Int63n(int64(10*time.Second)))
	default:
		p.hold = short
	}
	return p
}

// injector applies faults to a cluster through its proxies.
type injector struct {
	c       *clustertest.Cluster
	proxies map[string]*zktest.Proxy // "<process>/<link>"
	watch   *watcher
	ready   time.Duration     // bound on the cluster's return
	clocks  map[string]string // master -> its clock offset file (master.ClockOffsetFileEnv)
}

func proxyKey(process string, link clustertest.Link) string { return process + "/" + string(link) }

// leader is the master the watcher last saw leading, waiting up to 30 s
// for one.
func (in *injector) leader() (*clustertest.Process, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		if name, _ := in.watch.Leader(); name != "" {
			for _, m := range in.c.Masters {
				if m.Name == name {
					return m, nil
				}
			}
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("no master leads")
		}
		time.Sleep(100 * time.Millisecond) // the watcher samples on its own clock
	}
}

// apply injects p, holds it, undoes it and waits for the cluster to be
// whole again (every process back, as a supervisor would restart one that
// exited).
func (in *injector) apply(p plan) Fault {
	f := Fault{Kind: p.kind, Hold: p.hold}
	var undo func() error
	switch p.kind {
	case KillLeader, StopLeader, CutMasterZK, CutMasterDB, StepClock:
		m, err := in.leader()
		if err != nil {
			f.Err = err.Error()
			return f
		}
		f.Target = m.Name
		f.Start = time.Now()
		switch p.kind {
		case KillLeader:
			m.Kill9()
			undo = m.Restart
		case StopLeader:
			m.Pause()
			undo = func() error { m.Resume(); return nil }
		case CutMasterZK:
			undo = in.cut(m.Name, clustertest.LinkZK)
		case CutMasterDB:
			undo = in.cut(m.Name, clustertest.LinkDB)
		case StepClock:
			f.Detail = fmt.Sprintf("%+.1fs", p.step.Seconds())
			undo = in.stepClock(m.Name, p.step)
			if undo == nil {
				f.Err = "no clock file for " + m.Name
				return f
			}
		}
	case KillWorker, CutWorkerMaster, CutWorkerOut, CutWorkerZK:
		w := in.c.Workers[p.worker%len(in.c.Workers)]
		f.Target = w.Name
		f.Start = time.Now()
		switch p.kind {
		case KillWorker:
			w.Kill9()
			undo = w.Restart
		case CutWorkerMaster:
			undo = in.cut(w.Name, clustertest.LinkHost)
		case CutWorkerOut:
			var heals []func() error
			for _, m := range in.c.Masters {
				heals = append(heals, in.cut(w.Name, clustertest.LinkTo(m.Name)))
			}
			undo = func() error {
				for _, h := range heals {
					_ = h()
				}
				return nil
			}
		case CutWorkerZK:
			// With resets: the worker sees ZooKeeper gone at once, as
			// when ZooKeeper restarts, and its session outlives the cut.
			undo = in.cut(w.Name, clustertest.LinkZK)
			in.proxies[proxyKey(w.Name, clustertest.LinkZK)].Drop()
		}
	case KillZK:
		z := in.c.ZK.Servers[0]
		f.Target = "zookeeper"
		f.Start = time.Now()
		z.Stop()
		undo = z.Restart
	case KillDB:
		f.Target = "mariadb"
		f.Start = time.Now()
		in.c.MariaDB.Stop()
		undo = in.c.MariaDB.Restart
	case SlowDB:
		f.Target, f.Detail = "masters' database links", fmt.Sprintf("+%v each way", p.delay.Round(time.Millisecond))
		f.Start = time.Now()
		for _, m := range in.c.Masters {
			in.proxies[proxyKey(m.Name, clustertest.LinkDB)].SetDelay(p.delay)
		}
		undo = func() error {
			for _, m := range in.c.Masters {
				in.proxies[proxyKey(m.Name, clustertest.LinkDB)].SetDelay(0)
			}
			return nil
		}
	}
	time.Sleep(p.hold) // the fault lasts this long
	err := undo()
	f.Healed = time.Now()
	if err == nil {
		err = in.recover()
	}
	if err != nil {
		f.Err = err.Error()
		return f
	}
	f.Ready = time.Now()
	return f
}

// stepClock steps master's clock by step and returns the step back; nil
// when the master has no clock file.
func (in *injector) stepClock(master string, step time.Duration) func() error {
	path := in.clocks[master]
	if path == "" {
		return nil
	}
	write := func(d time.Duration) error { return os.WriteFile(path, []byte(d.String()+"\n"), 0o644) }
	if err := write(step); err != nil {
		return func() error { return err }
	}
	return func() error { return write(0) }
}

// cut partitions one link and returns its heal.
func (in *injector) cut(process string, link clustertest.Link) func() error {
	px := in.proxies[proxyKey(process, link)]
	px.Partition()
	return func() error { px.Heal(); return nil }
}

// recover restarts any master or worker that exited (a master whose
// session expired may exit for its supervisor to restart it) and waits
// until the cluster view lists them all with a leader.
func (in *injector) recover() error {
	deadline := time.Now().Add(in.ready)
	for {
		for _, p := range append(append([]*clustertest.Process(nil), in.c.Masters...), in.c.Workers...) {
			if !p.Running() {
				if err := p.Restart(); err != nil {
					return fmt.Errorf("restart %s: %w", p.Name, err)
				}
			}
		}
		left := time.Until(deadline)
		if left <= 0 {
			return fmt.Errorf("the cluster was not whole again within %v", in.ready)
		}
		err := in.c.WaitReady(min(left, 10*time.Second))
		if err == nil {
			// The view can show a killed leader's node until its session
			// expires (a restarted leader on the same address looks
			// whole): ready also needs a master saying it leads now.
			if err = in.waitLeading(deadline); err == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return err
		}
	}
}

// waitLeading waits until a sample taken from now on sees a master leading.
func (in *injector) waitLeading(deadline time.Time) error {
	from := time.Now()
	for in.watch.LeaderAfter(from) == "" {
		if time.Now().After(deadline) {
			return fmt.Errorf("no master said it leads since %s", from.Format("15:04:05.000"))
		}
		time.Sleep(50 * time.Millisecond) // the watcher samples on its own clock
	}
	return nil
}
