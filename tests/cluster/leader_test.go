package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/testkit/clustertest"
)

// TestKillLeaderMidDAG kills -9 the active master while b and c of a
// diamond run on the workers. The standby takes over and the instance
// succeeds with every task executed exactly once: b and c were running on
// live workers, so the new leader waits for their results (which arrive
// while no master leads and are re-sent) instead of running them again;
// each has a single attempt. A task the old leader was dispatching at the
// instant of the kill may have a lost attempt (need_fault_tolerance,
// superseded, never executed) before the one that ran: AssertRanOnce
// allows exactly that and nothing else.
func TestKillLeaderMidDAG(t *testing.T) {
	databases(t, func(t *testing.T, db string) {
		c := clustertest.New(t, clustertest.Options{Masters: 2, Workers: 2, SessionTimeout: sessionTimeout, DB: db})
		marks := t.TempDir()
		c.Apply(t, spec.Workflow{Name: "dag", Tasks: []spec.Task{
			task(marks, "a", sleep(300*time.Millisecond)),
			task(marks, "b", sleep(time.Second), "a"),
			task(marks, "c", sleep(time.Second), "a"),
			task(marks, "d", sleep(300*time.Millisecond), "b", "c"),
			task(marks, "e", sleep(300*time.Millisecond), "d"),
		}})
		id := c.Run(t, "dag")
		clustertest.WaitExecution(t, marks, id, "b", finishWithin)
		clustertest.WaitExecution(t, marks, id, "c", finishWithin)
		old := c.Masters[0]
		oldEpoch := c.Instance(t, id).Epoch
		killed := time.Now()
		old.Kill9()
		lead := c.WaitLeader(t, failoverWithin, old)
		t.Logf("%s leads %v after the kill of %s", lead.Name, time.Since(killed).Round(time.Millisecond), old.Name)

		inst := c.WaitFinished(t, id, finishWithin)
		c.AssertRanOnce(t, id, marks)
		rows := c.Tasks(t, id)
		for _, name := range []string{"b", "c"} {
			if len(rows[name]) != 1 {
				t.Fatalf("task %s was running on a live worker at the kill, yet has %d attempts", name, len(rows[name]))
			}
		}
		if inst.Host != lead.Addr || inst.Epoch <= oldEpoch {
			t.Fatalf("instance owned by %s in epoch %d, want %s in an epoch after %d", inst.Host, inst.Epoch, lead.Addr, oldEpoch)
		}
		c.AssertNoStuckRows(t)
	})
}

// TestPausedLeaderStandsBy freezes the active master (SIGSTOP) past the
// session timeout while its chain runs. The standby takes over, finishes
// that chain and runs another; then the old leader is woken with results
// of its old dispatches in its socket buffers and a new run arriving. It
// must notice that its term is over, dispatch nothing, and rejoin as a
// standby. Proofs: its log says it stopped leading and never led again;
// every dispatch recorded after the wake-up is for an instance owned by the
// new term; the fence still names the new leader; every task of every
// instance executed exactly once.
func TestPausedLeaderStandsBy(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Masters: 2, Workers: 2, SessionTimeout: sessionTimeout})
	marks := t.TempDir()
	c.Apply(t, chain(marks, "long", 6, 300*time.Millisecond))
	c.Apply(t, chain(marks, "short", 3, 100*time.Millisecond))
	first := c.Run(t, "long")
	clustertest.WaitExecution(t, marks, first, "t1", finishWithin)

	old := c.Masters[0]
	old.Pause()
	paused := time.Now()
	lead := c.WaitLeader(t, failoverWithin, old)
	t.Logf("%s leads %v after %s was paused", lead.Name, time.Since(paused).Round(time.Millisecond), old.Name)
	ctx := context.Background()
	term, err := c.Store.TermCurrentInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	second := c.Run(t, "short")
	c.WaitFinished(t, second, finishWithin)

	mark := old.LogMark()
	resumed := time.Now()
	old.Resume()
	third := c.Run(t, "short")
	for _, id := range []int64{first, second, third} {
		c.WaitFinished(t, id, finishWithin)
	}
	c.Eventually(t, failoverWithin, "the old leader to log the end of its term", func() bool {
		log := old.LogSince(mark)
		return (strings.Contains(log, "leadership lost") || strings.Contains(log, "a newer leader term exists")) &&
			strings.Contains(log, "term over")
	})
	if log := old.LogSince(mark); strings.Contains(log, "leading: recovering") {
		t.Fatalf("the old leader began a new term after the wake-up:\n%s", log)
	}
	if err := c.WaitReady(failoverWithin); err != nil {
		t.Fatal(err)
	}
	v, err := c.View()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range v.Masters {
		if want := map[string]string{old.Addr: "standby", lead.Addr: "active"}[m.Address]; m.Role != want {
			t.Fatalf("cluster view: master %s is %s, want %s: %+v", m.Address, m.Role, want, v.Masters)
		}
	}

	assertTermKept(t, c, term.Epoch, lead.Addr, resumed, "the old leader", marks, first, second, third)
}

// TestBothMastersRestart kills -9 both masters mid-chain and keeps them
// down until their registrations are gone, so the running task finishes
// while no master is up; then both start again on the same addresses. The
// new leader applies the result the worker re-sends and the instance
// resumes in place and succeeds, every task executed exactly once.
func TestBothMastersRestart(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Masters: 2, Workers: 2, SessionTimeout: sessionTimeout})
	marks := t.TempDir()
	c.Apply(t, chain(marks, "long", 5, 500*time.Millisecond))
	id := c.Run(t, "long")
	clustertest.WaitExecution(t, marks, id, "t1", finishWithin)
	for _, m := range c.Masters {
		m.Kill9()
	}
	c.Eventually(t, failoverWithin, "the killed masters to leave the registry", func() bool {
		v, err := c.View()
		return err == nil && len(v.Masters) == 0
	})
	restarted := time.Now()
	for _, m := range c.Masters {
		if err := m.Restart(); err != nil {
			t.Fatal(err)
		}
	}
	c.WaitFinished(t, id, finishWithin)
	c.AssertRanOnce(t, id, marks)
	t1 := c.Tasks(t, id)["t1"]
	if len(t1) != 1 || t1[0].EndTime == nil || !t1[0].EndTime.Before(restarted) {
		t.Fatalf("t1 should have ended, in its only attempt, while no master was up: %+v", t1)
	}
	if err := c.WaitReady(failoverWithin); err != nil {
		t.Fatal(err)
	}
	c.AssertNoStuckRows(t)
}
