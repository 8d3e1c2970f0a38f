package standalone_test

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
)

// A restart loses and repeats nothing: a webhook subscription gets every
// event of a run before the restart and of one after it once, in seq
// order, and a stream resumed with the last seq it saw before the restart
// gets exactly the later ones (on SQLite the seqs are ids from 0023 on,
// and the new term's publisher starts after the newest).
func TestEventsAcrossRestart(t *testing.T) {
	backends(t, func(t *testing.T, db func(*testing.T) string) {
		var (
			mu     sync.Mutex
			posted []int64
		)
		recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			var ev model.Event
			if err := json.Unmarshal(body, &ev); err != nil {
				w.WriteHeader(http.StatusBadRequest)
				return
			}
			mu.Lock()
			posted = append(posted, ev.Seq)
			mu.Unlock()
		}))
		defer recv.Close()
		postedAll := func(want []model.Event) bool {
			mu.Lock()
			defer mu.Unlock()
			return len(posted) >= len(want)
		}
		ctx := context.Background()
		// runDone runs diamond to its end and waits for its last event to be
		// published (on MySQL the publisher numbers it after the commit).
		runDone := func(e *env) {
			id := e.run("diamond", nil)
			if iv := e.wait(id, time.Minute); iv.State != "succeeded" {
				t.Fatalf("run %d: %s", id, iv.State)
			}
			wait.Until(t, time.Minute, "the run's end published", func() bool {
				evs, err := e.store().EventList(ctx, 0, model.EventFilter{Instance: id, Kinds: []string{model.EventInstance}}, 100)
				return err == nil && len(evs) > 0 && evs[len(evs)-1].State == "succeeded"
			})
		}
		url, dir := db(t), t.TempDir()
		e := startOn(t, dir, url)
		e.do("POST", "/api/v1/projects", `{"name":"demo"}`, http.StatusCreated, nil)
		e.apply(diamondSpec)
		e.do("PUT", "/api/v1/subscriptions/hook", fmt.Sprintf(`{"url":%q,"project":"demo"}`, recv.URL), http.StatusCreated, nil)
		runDone(e)
		before, err := e.store().EventList(ctx, 0, model.EventFilter{Project: "demo"}, 1000)
		if err != nil || len(before) == 0 {
			t.Fatalf("events before the restart: %v %v", before, err)
		}
		wait.Until(t, time.Minute, "the run's events posted", func() bool { return postedAll(before) })
		var sub struct {
			Cursor int64 `json:"cursor"`
		}
		wait.Until(t, 30*time.Second, "the subscription's cursor at the last event", func() bool {
			e.do("GET", "/api/v1/subscriptions/hook", "", http.StatusOK, &sub)
			return sub.Cursor == before[len(before)-1].Seq
		})
		e.sa.Stop()

		e = startOn(t, dir, url)
		runDone(e)
		all, err := e.store().EventList(ctx, 0, model.EventFilter{Project: "demo"}, 1000)
		if err != nil || len(all) <= len(before) {
			t.Fatalf("events after the restart: %d (%d before) %v", len(all), len(before), err)
		}
		wait.Until(t, time.Minute, "both runs' events posted", func() bool { return postedAll(all) })
		mu.Lock()
		got := fmt.Sprint(posted)
		mu.Unlock()
		var want []int64
		for i, ev := range all {
			if i > 0 && ev.Seq <= all[i-1].Seq {
				t.Fatalf("outbox seqs not increasing: %d after %d", ev.Seq, all[i-1].Seq)
			}
			want = append(want, ev.Seq)
		}
		if got != fmt.Sprint(want) {
			t.Fatalf("posted seqs:\n got %s\nwant %v", got, want)
		}

		ch, stop := e.stream("project=demo", before[len(before)-1].Seq)
		defer stop()
		for _, w := range all[len(before):] {
			if ev := next(t, ch); ev.ID != w.Seq || ev.Event.State != w.State || ev.Event.TaskName != w.TaskName {
				t.Fatalf("resumed stream: %d %+v, want %+v", ev.ID, ev.Event, w)
			}
		}
	})
}
