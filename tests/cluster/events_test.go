package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/testkit/clustertest"
)

// openStream reads GET /api/v1/events of the api process after lastID and
// sends the events on the returned channel until stop.
func openStream(t *testing.T, base, token, query string, lastID int64) (<-chan model.Event, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/api/v1/events?"+query, nil)
	req.Header.Set("Last-Event-ID", strconv.FormatInt(lastID, 10))
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != http.StatusOK {
		cancel()
		t.Fatalf("events: %v %v", resp, err)
	}
	out, done := make(chan model.Event), make(chan struct{})
	go func() {
		defer close(done)
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var e model.Event
			if json.Unmarshal([]byte(data), &e) != nil {
				return
			}
			select {
			case out <- e:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out, func() { cancel(); <-done }
}

func nextEvent(t *testing.T, ch <-chan model.Event) model.Event {
	t.Helper()
	select {
	case e, ok := <-ch:
		if !ok {
			t.Fatal("the event stream ended")
		}
		return e
	case <-time.After(finishWithin):
		t.Fatalf("no event within %v", finishWithin)
	}
	return model.Event{}
}

// TestEventStreamAcrossLeaderKill reads the event stream of a run from the
// api process, hangs up mid-run, kills -9 the leader and resumes with
// Last-Event-ID while the standby takes over: the client sees every event
// of the run once, in order, exactly as the outbox holds them, including
// those the dead leader committed but had not published.
func TestEventStreamAcrossLeaderKill(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Masters: 2, Workers: 2, SessionTimeout: sessionTimeout})
	marks := t.TempDir()
	c.Apply(t, spec.Workflow{Name: "dag", Tasks: []spec.Task{
		task(marks, "a", sleep(300*time.Millisecond)),
		task(marks, "b", sleep(time.Second), "a"),
		task(marks, "c", sleep(time.Second), "a"),
		task(marks, "d", sleep(300*time.Millisecond), "b", "c"),
	}})
	base := "http://" + c.API.Addr
	ch, hangUp := openStream(t, base, c.Token, "workflow=dag", 0)
	id := c.Run(t, "dag")
	var got []model.Event
	for {
		e := nextEvent(t, ch)
		got = append(got, e)
		if e.TaskName == "b" && e.State == "running" {
			break
		}
	}
	hangUp()
	old := c.Leader()
	old.Kill9()
	ch, hangUp = openStream(t, base, c.Token, "workflow=dag", got[len(got)-1].Seq)
	defer hangUp()
	lead := c.WaitLeader(t, failoverWithin, old)
	for {
		e := nextEvent(t, ch)
		got = append(got, e)
		if e.Kind == model.EventInstance && model.WorkflowState(e.State).Finished() {
			break
		}
	}
	inst := c.WaitFinished(t, id, finishWithin)
	if inst.State != model.WorkflowSucceeded || got[len(got)-1].State != string(model.WorkflowSucceeded) {
		t.Fatalf("run %s, last event %+v", inst.State, got[len(got)-1])
	}
	want, err := c.Store.EventList(context.Background(), 0, model.EventFilter{Instance: id}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("stream gave %d events, the outbox has %d:\n got %+v\nwant %+v", len(got), len(want), got, want)
	}
	for i := range want {
		if got[i].Seq != want[i].Seq || got[i].State != want[i].State || got[i].TaskInstanceID != want[i].TaskInstanceID {
			t.Fatalf("event %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
	t.Logf("%d events across the failover to %s", len(got), lead.Name)
	c.AssertNoStuckRows(t)
}
