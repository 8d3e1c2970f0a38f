package standalone_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/events"
	"github.com/beluga-scheduler/beluga/common/model"
)

// sseEvent is one server-sent event as a client sees it.
type sseEvent struct {
	ID    int64
	Event model.Event
}

// stream opens GET /api/v1/events?query with Last-Event-ID lastID (<0:
// none) and sends what arrives on the returned channel until stop is
// called (the client hangs up) or the server ends the stream.
func (e *env) stream(query string, lastID int64) (<-chan sseEvent, func()) {
	e.t.Helper()
	return e.streamWith(e.client(), query, lastID)
}

// streamWith is stream as the caller hc authenticates.
func (e *env) streamWith(hc *http.Client, query string, lastID int64) (<-chan sseEvent, func()) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", e.base+"/api/v1/events?"+query, nil)
	if lastID >= 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatInt(lastID, 10))
	}
	resp, err := hc.Do(req)
	if err != nil {
		cancel()
		e.t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		e.t.Fatalf("events: %d %s: %s", resp.StatusCode, resp.Header.Get("Content-Type"), b)
	}
	out := make(chan sseEvent)
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		var cur sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				cur.ID, _ = strconv.ParseInt(line[4:], 10, 64)
			case strings.HasPrefix(line, "data: "):
				if err := json.Unmarshal([]byte(line[6:]), &cur.Event); err != nil {
					return
				}
			case line == "" && cur.ID != 0:
				select {
				case out <- cur:
				case <-ctx.Done():
					return
				}
				cur = sseEvent{}
			}
		}
	}()
	return out, func() { cancel(); <-done }
}

// next reads one event within a deadline.
func next(t *testing.T, ch <-chan sseEvent) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("the event stream ended")
		}
		return ev
	case <-time.After(60 * time.Second):
		t.Fatal("no event within 60s")
	}
	return sseEvent{}
}

const gated = `name: gated
tasks:
  - {name: a, command: "true"}
  - {name: b, command: "while [ ! -f %s ]; do sleep 0.05; done", depends_on: [a]}
  - {name: c, command: "true", depends_on: [b]}
`

// A client that hangs up mid-run and comes back with Last-Event-ID sees
// every event of the run once, in order, the same as the outbox holds.
func TestEventStreamResumes(t *testing.T) {
	backends(t, func(t *testing.T, db func(*testing.T) string) {
		e := start(t, db(t))
		gate := filepath.Join(e.dir, "go")
		e.apply(fmt.Sprintf(gated, gate))
		ch, hangUp := e.stream("project=demo&workflow=gated", -1) // from now on
		id := e.run("gated", nil)
		var got []sseEvent
		for {
			ev := next(t, ch)
			got = append(got, ev)
			if ev.Event.TaskName == "b" && ev.Event.State == "running" {
				break
			}
		}
		hangUp()
		if err := os.WriteFile(gate, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if iv := e.wait(id, time.Minute); iv.State != "succeeded" {
			t.Fatalf("run %s", iv.State)
		}
		ch, hangUp = e.stream("project=demo&workflow=gated", got[len(got)-1].ID)
		defer hangUp()
		for {
			ev := next(t, ch)
			got = append(got, ev)
			if ev.Event.Kind == model.EventInstance && ev.Event.State == "succeeded" {
				break
			}
		}
		want, err := e.store().EventList(context.Background(), 0, model.EventFilter{Instance: id}, 1000)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("stream gave %d events, the outbox has %d:\n%v\n%v", len(got), len(want), got, want)
		}
		for i := range want {
			if got[i].ID != want[i].Seq || got[i].Event.Seq != want[i].Seq || got[i].Event.State != want[i].State ||
				got[i].Event.TaskName != want[i].TaskName || got[i].Event.InstanceID != id {
				t.Fatalf("event %d: got %+v, want %+v", i, got[i], want[i])
			}
		}
		// The run's states in order: instance submitted and running, then each
		// task submitted .. succeeded, then the instance.
		trail := make([]string, len(got))
		for i, ev := range got {
			trail[i] = ev.Event.TaskName + ":" + ev.Event.State
		}
		if s := strings.Join(trail, " "); !strings.HasPrefix(s, ":submitted :running a:submitted") ||
			!strings.Contains(s, "b:running") || !strings.HasSuffix(s, "c:succeeded :succeeded") {
			t.Fatalf("trail: %s", s)
		}
	})
}

func TestEventRequestsRefused(t *testing.T) {
	e := start(t, "")
	for _, c := range []struct{ method, path, body, header string }{
		{"GET", "/api/v1/events?instance=x", "", ""},
		{"GET", "/api/v1/events?instance=0", "", ""},
		{"GET", "/api/v1/events?project=a%20b", "", ""},
		{"GET", "/api/v1/events?after=-3", "", ""},
		{"GET", "/api/v1/events?kinds=instance,tasks", "", ""},
		{"GET", "/api/v1/events?kinds=", "", ""},
		{"GET", "/api/v1/events", "", "abc"},
		{"PUT", "/api/v1/subscriptions/s1", `{}`, ""},
		{"PUT", "/api/v1/subscriptions/s1", `{"url":"ftp://x/y"}`, ""},
		{"PUT", "/api/v1/subscriptions/s1", `{"url":"/relative"}`, ""},
		{"PUT", "/api/v1/subscriptions/s1", `{"url":"http://x/","colour":"red"}`, ""},
		{"PUT", "/api/v1/subscriptions/s1", `{"url":"http://x/","project":"no such name!"}`, ""},
		{"PUT", "/api/v1/subscriptions/s1", `{"url":"http://x/","secret":" padded "}`, ""},
		{"PUT", "/api/v1/subscriptions/bad%20name", `{"url":"http://x/"}`, ""},
		{"PUT", "/api/v1/subscriptions/s1", `[1]`, ""},
	} {
		req, _ := http.NewRequest(c.method, e.base+c.path, strings.NewReader(c.body))
		if c.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if c.header != "" {
			req.Header.Set("Last-Event-ID", c.header)
		}
		resp, err := e.client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `"error"`) {
			t.Errorf("%s %s %s: %d %s, want 400 naming the problem", c.method, c.path, c.body, resp.StatusCode, b)
		}
	}
	e.do("GET", "/api/v1/subscriptions/s1", "", http.StatusNotFound, nil)
	e.do("GET", "/api/v1/subscriptions/s1/deliveries", "", http.StatusNotFound, nil)
	e.do("DELETE", "/api/v1/subscriptions/s1", "", http.StatusNotFound, nil)
}

// A webhook subscription gets one signed POST per event of the run, in
// order, and after a 500 the same event again, later; the delivery log
// shows both attempts; the secret is never shown back.
func TestWebhookSubscription(t *testing.T) {
	const secret = "s3cret-for-hmac"
	type post struct {
		id      int64
		attempt int
		at      time.Time
		ev      model.Event
	}
	var (
		mu    sync.Mutex
		posts []post
		calls int
	)
	bad := make(chan string, 100)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if _, err := events.Verify([]byte(secret), r.Header.Get(events.SignatureHeader), body); err != nil {
			bad <- err.Error()
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		var ev model.Event
		if err := json.Unmarshal(body, &ev); err != nil {
			bad <- err.Error()
			return
		}
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls <= 2 { // the first event fails twice: retried with back-off
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		a, _ := strconv.Atoi(r.Header.Get("Beluga-Delivery-Attempt"))
		posts = append(posts, post{id: ev.Seq, attempt: a, at: time.Now(), ev: ev})
	}))
	defer recv.Close()
	e := start(t, "")
	e.apply(diamondSpec)
	var sub struct {
		Name      string `json:"name"`
		SecretSet bool   `json:"secret_set"`
		Secret    string `json:"secret"`
	}
	e.do("PUT", "/api/v1/subscriptions/hook", fmt.Sprintf(`{"url":%q,"project":"demo","secret":%q}`, recv.URL, secret), http.StatusCreated, &sub)
	if !sub.SecretSet || sub.Secret != "" {
		t.Fatalf("subscription answer: %+v", sub)
	}
	var raw string
	e.do("GET", "/api/v1/subscriptions", "", http.StatusOK, &raw)
	if strings.Contains(raw, secret) {
		t.Fatalf("the list shows the secret: %s", raw)
	}
	id := e.run("diamond", nil)
	if iv := e.wait(id, time.Minute); iv.State != "succeeded" {
		t.Fatalf("run %s", iv.State)
	}
	want, _ := e.store().EventList(context.Background(), 0, model.EventFilter{Instance: id}, 1000)
	wait.Until(t, 60*time.Second, "every event posted", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(posts) >= len(want)
	})
	select {
	case why := <-bad:
		t.Fatalf("a POST was not signed right: %s", why)
	default:
	}
	mu.Lock()
	defer mu.Unlock()
	for i, w := range want {
		if posts[i].id != w.Seq || posts[i].ev.State != w.State || posts[i].ev.TaskName != w.TaskName {
			t.Fatalf("post %d: %+v, want event %+v", i, posts[i], w)
		}
	}
	if posts[0].attempt != 3 {
		t.Fatalf("first event delivered at attempt %d, want 3 (after two 500s)", posts[0].attempt)
	}
	var log struct {
		Items []struct {
			EventID    int64  `json:"event_id"`
			Attempt    int    `json:"attempt"`
			StatusCode int    `json:"status_code"`
			OK         bool   `json:"ok"`
			Error      string `json:"error"`
			Time       time.Time
		} `json:"items"`
	}
	e.do("GET", "/api/v1/subscriptions/hook/deliveries?limit=1000", "", http.StatusOK, &log)
	var first []string
	var times []time.Time
	for i := len(log.Items) - 1; i >= 0; i-- {
		d := log.Items[i]
		if d.EventID == want[0].Seq {
			first = append(first, fmt.Sprintf("%d:%d:%v", d.Attempt, d.StatusCode, d.OK))
			times = append(times, d.Time)
		}
	}
	if strings.Join(first, " ") != "1:500:false 2:500:false 3:200:true" {
		t.Fatalf("delivery log of the first event: %v", first)
	}
	if g1, g2 := times[1].Sub(times[0]), times[2].Sub(times[1]); g1 < 900*time.Millisecond || g2 < g1 {
		t.Fatalf("retry gaps %v then %v: want back-off from 1s, doubling", g1, g2)
	}
	var stored struct {
		Cursor int64 `json:"cursor"`
	}
	wait.Until(t, 30*time.Second, "cursor at the last event", func() bool {
		e.do("GET", "/api/v1/subscriptions/hook", "", http.StatusOK, &stored)
		return stored.Cursor >= want[len(want)-1].Seq
	})
	e.do("DELETE", "/api/v1/subscriptions/hook", "", http.StatusNoContent, nil)
}

const diamondSpec = `name: diamond
tasks:
  - {name: a, command: "true"}
  - {name: b, command: "true", depends_on: [a]}
  - {name: c, command: "true", depends_on: [a]}
  - {name: d, command: "true", depends_on: [b, c]}
`

// An open event stream ends when the server stops: shutdown does not wait
// out its timeout for a stream that never ends by itself.
func TestEventStreamEndsOnShutdown(t *testing.T) {
	e := start(t, "")
	e.apply(diamondSpec)
	ch, hangUp := e.stream("", 0)
	defer hangUp()
	e.run("diamond", nil)
	next(t, ch) // the stream is live
	began := time.Now()
	e.sa.Stop()
	if took := time.Since(began); took > 5*time.Second {
		t.Fatalf("stop took %v with a stream open", took)
	}
	for range ch { // drained until the server ended it
	}
}

// viewerOfDemo applies wf in demo and in a new project other, and returns
// the client of user viv, who may view demo only.
func (e *env) viewerOfDemo(wf string) *http.Client {
	e.do("POST", "/api/v1/projects", `{"name":"other"}`, http.StatusCreated, nil)
	e.apply(wf)
	e.do("PUT", "/api/v1/projects/other/workflows/w", wf, http.StatusCreated, nil)
	e.do("POST", "/api/v1/users", `{"name":"viv","password":"viv-password"}`, http.StatusCreated, nil)
	e.do("PUT", "/api/v1/projects/demo/grants/viv", `{"level":"view"}`, http.StatusOK, nil)
	var lr struct {
		Token string `json:"token"`
	}
	e.do("POST", "/api/v1/login", `{"username":"viv","password":"viv-password"}`, http.StatusOK, &lr)
	viv := &http.Client{Transport: bearer{lr.Token, http.DefaultTransport}}
	return viv
}

// runInOther runs w in project other to its end (it must succeed).
func (e *env) runInOther() {
	e.t.Helper()
	var other struct {
		ID int64 `json:"id"`
	}
	e.do("POST", "/api/v1/projects/other/workflows/w/runs", `{}`, http.StatusCreated, &other)
	if iv := e.wait(other.ID, time.Minute); iv.State != "succeeded" {
		e.t.Fatalf("run in other: %s", iv.State)
	}
}

// A user sees on the stream only the events of projects they may view:
// a run in a project without a grant never shows, not even when asked for
// by name; an anonymous stream is refused.
func TestEventStreamShowsOnlyViewableProjects(t *testing.T) {
	e := start(t, "")
	const wf = "name: w\ntasks:\n  - {name: a, command: \"true\"}\n"
	viv := e.viewerOfDemo(wf)

	resp, err := http.Get(e.base + "/api/v1/events")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("anonymous event stream: %d, want 401", resp.StatusCode)
	}

	e.runInOther()
	id := e.run("w", nil)
	all, hangUp := e.streamWith(viv, "", 0) // from the first event: other's come before demo's
	defer hangUp()
	named, hangUpNamed := e.streamWith(viv, "project=other", 0)
	defer hangUpNamed()
	for {
		ev := next(t, all)
		if ev.Event.Project != "demo" {
			t.Fatalf("viv (view on demo only) was sent an event of project %q: %+v", ev.Event.Project, ev.Event)
		}
		if ev.Event.Kind == model.EventInstance && ev.Event.InstanceID == id && ev.Event.State == "succeeded" {
			break
		}
	}
	select {
	case ev, ok := <-named:
		if ok {
			t.Fatalf("viv's stream of project other sent %+v", ev.Event)
		}
	case <-time.After(500 * time.Millisecond): // nothing may come; the positive case above bounds the wait
	}
}

// kinds=instance sends the instance events only, and still only those of
// the projects the caller may view; an instance's read says which event it
// reflects (event_seq), from where a stream misses nothing.
func TestEventStreamKinds(t *testing.T) {
	e := start(t, "")
	const wf = "name: w\ntasks:\n  - {name: a, command: \"true\"}\n  - {name: b, command: \"true\", depends_on: [a]}\n"
	viv := e.viewerOfDemo(wf)

	e.runInOther()
	id := e.run("w", nil)
	insts, hangUp := e.streamWith(viv, "kinds=instance", 0) // from the first event: other's come first
	defer hangUp()
	tasks, hangUpTasks := e.streamWith(e.client(), "kinds=task,timeout&instance="+strconv.FormatInt(id, 10), 0)
	defer hangUpTasks()
	var trail []string
	var last int64
	for {
		ev := next(t, insts)
		if ev.Event.Kind != model.EventInstance || ev.Event.Project != "demo" {
			t.Fatalf("viv's kinds=instance stream (view on demo only) sent %+v", ev.Event)
		}
		trail = append(trail, ev.Event.State)
		if ev.Event.InstanceID == id && ev.Event.State == "succeeded" {
			last = ev.ID
			break
		}
	}
	if s := strings.Join(trail, " "); s != "submitted running succeeded" {
		t.Fatalf("instance events: %s, want submitted running succeeded", s)
	}
	n := 0
	for n < 2 {
		ev := next(t, tasks)
		if ev.Event.Kind != model.EventTask || ev.Event.InstanceID != id {
			t.Fatalf("kinds=task,timeout stream of instance %d sent %+v", id, ev.Event)
		}
		if ev.Event.State == "succeeded" {
			n++
		}
	}
	var d struct {
		EventSeq int64 `json:"event_seq"`
	}
	e.do("GET", fmt.Sprintf("/api/v1/instances/%d", id), "", http.StatusOK, &d)
	if d.EventSeq < last {
		t.Fatalf("the read of the ended instance says event_seq %d; its last event is %d", d.EventSeq, last)
	}
}
