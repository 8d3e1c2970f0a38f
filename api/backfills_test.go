package api

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
)

const backfillPathP = "/api/v1/projects/p/workflows/nightly_etl/backfill"

func at(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// wantTimes checks a backfill's times against RFC 3339 strings, in order.
func wantTimes(t *testing.T, got []Time, want ...string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("times %v, want %v", got, want)
	}
	for i, w := range want {
		if !got[i].Equal(at(t, w)) {
			t.Fatalf("time %d = %v, want %s (all: %v)", i, got[i], w, got)
		}
	}
}

func TestBackfills(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	ctx := context.Background()
	b.mustWorkflow("p")

	// 02:00 in Shanghai is 18:00 UTC the day before; desc is newest first.
	r := b.send("POST", backfillPathP, `{"start":"2026-11-01T00:00:00+08:00","end":"2026-11-03T02:00:00+08:00",
		"cron":"0 2 * * *","timezone":"Asia/Shanghai","parallelism":3,"order":"desc","on_failure":"stop",
		"priority":"high","worker_group":"gpu","params":{"bizdate":"$[yyyyMMdd]"},"dry_run":true,"by":"ann"}`).want(t, http.StatusCreated)
	var bf Backfill
	r.json(t, &bf)
	if r.header.Get("Location") != "/api/v1/backfills/"+itoa(bf.ID) || b.notified.Load() != 1 {
		t.Fatalf("location %q, notified %d", r.header.Get("Location"), b.notified.Load())
	}
	wantTimes(t, bf.Times, "2026-11-02T18:00:00Z", "2026-11-01T18:00:00Z", "2026-10-31T18:00:00Z")
	if bf.ID == 0 || bf.Project != "p" || bf.Workflow != "nightly_etl" || bf.Cron != "0 2 * * *" || bf.Timezone != "Asia/Shanghai" ||
		!bf.Start.Equal(at(t, "2026-10-31T16:00:00Z")) || !bf.End.Equal(at(t, "2026-11-02T18:00:00Z")) || bf.Total != 3 ||
		bf.Submitted != 0 || bf.Parallelism != 3 || bf.OnFailure != "stop" || bf.Priority != "high" || bf.WorkerGroup != "gpu" ||
		bf.Params["bizdate"] != "$[yyyyMMdd]" || !bf.DryRun || bf.State != "running" || bf.Reason != "" || bf.RequestedBy != "admin" ||
		bf.CreatedAt.IsZero() || bf.EndAt != nil || bf.Progress != (BackfillProgress{}) {
		t.Fatalf("created %+v", bf)
	}
	var raw map[string]any
	r.json(t, &raw)
	if s, _ := raw["start"].(string); s != "2026-10-31T16:00:00.000Z" || raw["end_at"] != nil {
		t.Fatalf("start %q, end_at %v", s, raw["end_at"])
	}
	for _, k := range []string{"order", "revision", "project_id"} {
		if _, ok := raw[k]; ok {
			t.Fatalf("backfill JSON has %q: %s", k, r.body)
		}
	}

	// No cron: the schedule's cron and timezone; the defaults.
	b.send("PUT", schedPath, `{"cron":"0 2 * * *","timezone":"Asia/Shanghai"}`).want(t, http.StatusCreated)
	r = b.send("POST", backfillPathP, `{"start":"2026-11-01T00:00:00Z","end":"2026-11-02T23:59:59Z"}`).want(t, http.StatusCreated)
	var def Backfill
	r.json(t, &def)
	wantTimes(t, def.Times, "2026-11-01T18:00:00Z", "2026-11-02T18:00:00Z")
	if def.Cron != "0 2 * * *" || def.Timezone != "Asia/Shanghai" || def.Parallelism != 1 || def.OnFailure != "continue" ||
		def.Priority != "" || def.WorkerGroup != "" || len(def.Params) != 0 || def.DryRun || def.RequestedBy != "admin" {
		t.Fatalf("defaults %+v", def)
	}
	for _, want := range []string{`"params":{}`, `"dry_run":false`, `"worker_group":""`, `"end_at":null`,
		`"progress":{"unfinished":0,"succeeded":0,"failed":0}`} {
		if !strings.Contains(string(r.body), want) {
			t.Fatalf("body lacks %s: %s", want, r.body)
		}
	}
	if strings.Contains(string(r.body), `"priority"`) {
		t.Fatalf("priority is not omitted when it follows the workflow: %s", r.body)
	}
	// One instant is a range; exactly the limit is allowed.
	b.send("POST", backfillPathP, `{"start":"2026-11-01T18:00:00Z","end":"2026-11-01T18:00:00Z"}`).want(t, http.StatusCreated)
	var big Backfill
	b.send("POST", backfillPathP, `{"start":"2026-01-01T00:00:00Z","end":"2026-02-11T15:00:00Z","cron":"@hourly"}`).
		want(t, http.StatusCreated).json(t, &big)
	if big.Total != maxBackfillRuns || len(big.Times) != maxBackfillRuns || !big.Times[999].Equal(at(t, "2026-02-11T15:00:00Z")) {
		t.Fatalf("1000 hourly times: %d, last %v", big.Total, big.Times[len(big.Times)-1])
	}

	// The master submits the first two times: the runs carry the backfill.
	m, err := b.store.BackfillGet(ctx, bf.ID)
	if err != nil {
		t.Fatal(err)
	}
	insts, err := b.store.BackfillSubmit(ctx, m, 2)
	if err != nil || len(insts) != 2 {
		t.Fatalf("submit: %v %v", insts, err)
	}
	var d InstanceDetail
	b.get("/api/v1/instances/"+itoa(insts[0].ID)).want(t, http.StatusOK).json(t, &d)
	if d.BackfillID != bf.ID || d.CommandType != "backfill" || d.ScheduleTime == nil || !d.ScheduleTime.Equal(bf.Times[0].Time) ||
		d.Timezone != "Asia/Shanghai" || d.Priority != "high" || d.WorkerGroup != "gpu" || !d.DryRun || d.ScheduleID != 0 {
		t.Fatalf("backfill run %+v", d.Instance)
	}
	if r := b.get("/api/v1/instances/" + itoa(b.mustRun("p", "").ID)); strings.Contains(string(r.body), `"backfill_id"`) {
		t.Fatalf("a manual run shows backfill_id: %s", r.body)
	}
	var got Backfill
	b.get("/api/v1/backfills/"+itoa(bf.ID)).want(t, http.StatusOK).json(t, &got)
	if got.Submitted != 2 || got.Progress != (BackfillProgress{Unfinished: 2}) || got.Total != 3 || len(got.Times) != 3 {
		t.Fatalf("after submit %+v", got)
	}

	// Stop: 200, then 409 naming the state.
	notified := b.notified.Load()
	r = b.send("POST", "/api/v1/backfills/"+itoa(bf.ID)+"/actions", `{"action":"stop","by":"bo"}`).want(t, http.StatusOK)
	got = Backfill{}
	r.json(t, &got)
	if got.State != "stopped" || got.EndAt == nil || !strings.Contains(got.Reason, "stopped by admin after 2 of 3") ||
		got.Submitted != 2 || b.notified.Load() != notified+1 {
		t.Fatalf("stopped %+v", got)
	}
	e := b.send("POST", "/api/v1/backfills/"+itoa(bf.ID)+"/actions", `{"action":"stop"}`).wantError(t, http.StatusConflict, CodeConflict)
	if !strings.Contains(e.Message, "is stopped, not running") {
		t.Fatalf("second stop: %q", e.Message)
	}

	// List: newest first; filters.
	b.mustWorkflow("q")
	b.send("POST", "/api/v1/projects/q/workflows/nightly_etl/backfill",
		`{"start":"2026-11-01T00:00:00Z","end":"2026-11-01T00:00:00Z","cron":"@daily"}`).want(t, http.StatusCreated)
	for _, tc := range []struct {
		query string
		n     int
	}{
		{"", 5}, {"?project=p", 4}, {"?project=q", 1}, {"?project=nope", 0}, {"?workflow=nightly_etl", 5}, {"?workflow=other", 0},
		{"?state=stopped", 1}, {"?state=running", 4}, {"?state=done", 0}, {"?project=p&state=running", 3},
	} {
		var l List[Backfill]
		r := b.get("/api/v1/backfills"+tc.query).want(t, http.StatusOK)
		r.json(t, &l)
		if len(l.Items) != tc.n {
			t.Fatalf("list %q: %d items, want %d", tc.query, len(l.Items), tc.n)
		}
		// The list leaves the times out (the UI polls it); get has them.
		if strings.Contains(string(r.body), `"times"`) {
			t.Fatalf("list %q carries times: %s", tc.query, r.body)
		}
		for _, it := range l.Items {
			if it.Total == 0 || it.Submitted > it.Total {
				t.Fatalf("list %q: item %+v", tc.query, it)
			}
		}
		for i := 1; i < len(l.Items); i++ {
			if l.Items[i].ID > l.Items[i-1].ID {
				t.Fatalf("list %q is not newest first", tc.query)
			}
		}
	}

	for _, tc := range []struct{ method, path, body, want string }{
		{"GET", "/api/v1/backfills?state=paused", "", `"paused" is not a backfill state`},
		{"GET", "/api/v1/backfills?project=a%20b", "", "query parameter project"},
		{"GET", "/api/v1/backfills?workflow=a%2Fb", "", "query parameter workflow"},
		{"GET", "/api/v1/backfills/x", "", "positive integer"},
		{"POST", "/api/v1/backfills/1/actions", `{"action":"pause"}`, `action "pause" is not valid; the action on a backfill is stop`},
		{"POST", "/api/v1/backfills/1/actions", `{}`, "action is required"},
		{"POST", "/api/v1/backfills/1/actions", `{"action":"stop","by":" "}`, `"by" must be`},
		{"POST", "/api/v1/backfills/1/actions", `{"action":"stop","x":1}`, `unknown field "x"`},
	} {
		e := b.send(tc.method, tc.path, tc.body).wantError(t, http.StatusBadRequest, CodeBadRequest)
		if !strings.Contains(e.Message, tc.want) {
			t.Fatalf("%s %s: message %q lacks %q", tc.method, tc.path, e.Message, tc.want)
		}
	}
	for _, tc := range []struct{ method, path, body, want string }{
		{"GET", "/api/v1/backfills/999", "", "backfill 999"},
		{"POST", "/api/v1/backfills/999/actions", `{"action":"stop"}`, "backfill 999"},
		{"POST", "/api/v1/projects/p/workflows/nope/backfill", `{"start":"2026-11-01T00:00:00Z","end":"2026-11-02T00:00:00Z","cron":"@daily"}`, `workflow "nope"`},
		{"POST", "/api/v1/projects/p/workflows/nope/backfill", `{"start":"2026-11-01T00:00:00Z","end":"2026-11-02T00:00:00Z"}`, `workflow "nope"`},
		{"POST", "/api/v1/projects/nope/workflows/nightly_etl/backfill", `{"start":"2026-11-01T00:00:00Z","end":"2026-11-02T00:00:00Z"}`, `project "nope"`},
		{"POST", "/api/v1/projects/nope/workflows/nightly_etl/backfill", `{"start":"2026-11-01T00:00:00Z","end":"2026-11-02T00:00:00Z","cron":"@daily"}`, `project "nope"`},
	} {
		e := b.send(tc.method, tc.path, tc.body).wantError(t, http.StatusNotFound, CodeNotFound)
		if !strings.Contains(e.Message, tc.want) {
			t.Fatalf("%s %s: message %q lacks %q", tc.method, tc.path, e.Message, tc.want)
		}
	}
}

func TestBackfillRejects(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.mustWorkflow("p") // no schedule
	const rng = `"start":"2026-11-01T00:00:00Z","end":"2026-11-30T00:00:00Z"`
	for _, tc := range []struct{ name, body, want string }{
		{"missing start", `{"end":"2026-11-30T00:00:00Z","cron":"@daily"}`, "start is required: an RFC 3339 time"},
		{"missing end", `{"start":"2026-11-01T00:00:00Z","cron":"@daily"}`, "end is required"},
		{"bad start", `{"start":"2026-11-01","end":"2026-11-30T00:00:00Z","cron":"@daily"}`, `start "2026-11-01" is not an RFC 3339 time`},
		{"start not a string", `{"start":1,"end":"2026-11-30T00:00:00Z","cron":"@daily"}`, `field "start"`},
		{"end before start", `{"start":"2026-11-30T00:00:00Z","end":"2026-11-01T00:00:00Z","cron":"@daily"}`,
			"end 2026-11-01T00:00:00Z is before start 2026-11-30T00:00:00Z"},
		{"bad cron", `{` + rng + `,"cron":"every day"}`, `cron "every day"`},
		{"seven fields", `{` + rng + `,"cron":"0 0 2 * * * *"}`, "found 7"},
		{"long cron", `{` + rng + `,"cron":"0 2 * * *` + strings.Repeat(" ", 300) + `1"}`, "longer than 255"},
		{"CRON_TZ prefix", `{` + rng + `,"cron":"CRON_TZ=UTC @daily"}`, "give the zone in timezone"},
		{"unknown timezone", `{` + rng + `,"cron":"@daily","timezone":"Mars/Base"}`, `timezone "Mars/Base" is not a known IANA zone`},
		{"Local timezone", `{` + rng + `,"cron":"@daily","timezone":"Local"}`, `timezone "Local"`},
		{"timezone without cron", `{` + rng + `,"timezone":"UTC"}`, `timezone "UTC" needs a cron`},
		{"no cron and no schedule", `{` + rng + `}`, "give a cron or set a schedule"},
		{"parallelism 0", `{` + rng + `,"cron":"@daily","parallelism":0}`, "parallelism 0 is not valid: use 1"},
		{"parallelism 101", `{` + rng + `,"cron":"@daily","parallelism":101}`, "parallelism 101 is not valid"},
		{"parallelism not a number", `{` + rng + `,"cron":"@daily","parallelism":"2"}`, `field "parallelism"`},
		{"bad order", `{` + rng + `,"cron":"@daily","order":"random"}`, `order "random" is not valid: use asc`},
		{"bad on_failure", `{` + rng + `,"cron":"@daily","on_failure":"retry"}`, `on_failure "retry" is not valid: use continue`},
		{"bad priority", `{` + rng + `,"cron":"@daily","priority":"urgent"}`, `priority "urgent" is not valid`},
		{"bad worker group", `{` + rng + `,"cron":"@daily","worker_group":"a/b"}`, `worker_group "a/b"`},
		{"bad param name", `{` + rng + `,"cron":"@daily","params":{"1x":"a","ok":"b"}}`, `params: "1x": a param name`},
		{"bad param expression", `{` + rng + `,"cron":"@daily","params":{"bizdate":"$[yyyyQQ-1]"}}`, `param "bizdate": $[yyyyQQ-1]: unknown pattern "QQ"`},
		{"huge params", `{` + rng + `,"cron":"@daily","params":{"a":"` + strings.Repeat("x", 70000) + `"}}`, "limit is 65535"},
		{"no times in range", `{"start":"2026-11-01T19:00:00Z","end":"2026-11-02T17:59:59Z","cron":"0 2 * * *","timezone":"Asia/Shanghai"}`,
			`cron "0 2 * * *" (Asia/Shanghai) has no schedule time from 2026-11-01T19:00:00Z to 2026-11-02T17:59:59Z`},
		{"over the limit", `{"start":"2026-01-01T00:00:00Z","end":"2026-03-01T00:00:00Z","cron":"0 * * * *"}`,
			`cron "0 * * * *" (UTC) has 1417 schedule times from 2026-01-01T00:00:00Z to 2026-03-01T00:00:00Z: at most 1000 runs per backfill; narrow the range`},
		{"far over the limit", `{"start":"2026-01-01T00:00:00Z","end":"2027-01-01T00:00:00Z","cron":"* * * * * *"}`,
			"has more than 100000 schedule times"},
		{"bad by", `{` + rng + `,"cron":"@daily","by":"` + strings.Repeat("x", 129) + `"}`, `"by" must be`},
		{"unknown field", `{` + rng + `,"cron":"@daily","until":"x"}`, `unknown field "until"`},
		{"not an object", `["@daily"]`, "invalid JSON"},
		{"empty body", ``, "empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := b.do("POST", backfillPathP, "application/json", strings.NewReader(tc.body)).wantError(t, http.StatusBadRequest, CodeBadRequest)
			if !strings.Contains(e.Message, tc.want) {
				t.Fatalf("message %q lacks %q", e.Message, tc.want)
			}
		})
	}
	// Every problem in one answer.
	e := b.send("POST", backfillPathP, `{"end":"x","parallelism":0,"order":"up","on_failure":"x","priority":"y"}`).
		wantError(t, http.StatusBadRequest, CodeBadRequest)
	for _, want := range []string{"start is required", `end "x"`, "give a cron or set a schedule", "parallelism 0",
		`order "up"`, `on_failure "x"`, `priority "y"`} {
		if !strings.Contains(e.Message, want) {
			t.Fatalf("message %q lacks %q", e.Message, want)
		}
	}
	var l List[Backfill]
	b.get("/api/v1/backfills").want(t, http.StatusOK).json(t, &l)
	if len(l.Items) != 0 || b.notified.Load() != 0 {
		t.Fatalf("rejected backfills were stored (%d) or notified (%d)", len(l.Items), b.notified.Load())
	}
}

// TestBackfillLeavesTheFutureToTheSchedule: a range reaching past now
// backfills only the times up to now; a range wholly ahead is refused.
func TestBackfillLeavesTheFutureToTheSchedule(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.mustWorkflow("p")
	now := time.Now().UTC()
	// Just under three hours back: always three hourly times up to now.
	from, to := now.Add(-3*time.Hour+time.Second).Format(time.RFC3339), now.Add(3*time.Hour).Format(time.RFC3339)
	r := b.send("POST", backfillPathP, `{"start":"`+from+`","end":"`+to+`","cron":"@hourly"}`).want(t, http.StatusCreated)
	var bf Backfill
	r.json(t, &bf)
	if len(bf.Times) != 3 || bf.Times[2].After(now) || bf.Times[2].Before(now.Add(-time.Hour)) {
		t.Fatalf("times %v for a range around now %v", bf.Times, now)
	}
	ahead := now.Add(2 * time.Hour).Format(time.RFC3339)
	e := b.send("POST", backfillPathP, `{"start":"`+ahead+`","end":"`+to+`","cron":"@hourly"}`).
		wantError(t, http.StatusBadRequest, CodeBadRequest)
	if !strings.Contains(e.Message, "times after now are left to the schedule") {
		t.Fatalf("message %q", e.Message)
	}
}

// TestBackfillHonoursTheCalendar: without a cron, a backfill takes the
// schedule's calendar and decides its times as the schedule's fires are;
// the preview answers the same without storing; a viewer may preview but
// not start, and a project she cannot see is a 404.
func TestBackfillHonoursTheCalendar(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.mustWorkflow("p")
	b.mustWorkflow("q")
	b.send("PUT", "/api/v1/projects/p/calendars/xmas", `{"holidays":[{"date":"2025-12-25"},{"date":"2026-01-01"}]}`).want(t, http.StatusCreated)
	b.send("PUT", "/api/v1/projects/p/workflows/nightly_etl/schedule",
		`{"cron":"0 9 * * 4","calendar":"xmas","on_holiday":"next_business_day"}`).want(t, http.StatusCreated)
	body := `{"start":"2025-12-18T00:00:00Z","end":"2026-01-08T23:00:00Z"}`

	var pv BackfillPreview
	b.send("POST", backfillPathP+"/preview", body).want(t, http.StatusOK).json(t, &pv)
	wantTimes(t, pv.Times, "2025-12-18T09:00:00Z", "2025-12-26T09:00:00Z", "2026-01-02T09:00:00Z", "2026-01-08T09:00:00Z")
	if pv.Calendar != "xmas" || pv.OnHoliday != "next_business_day" || pv.Total != 4 || len(pv.Refused) != 2 ||
		!pv.Refused[0].Time.Equal(at(t, "2025-12-25T09:00:00Z")) || pv.Refused[0].Outcome != "refused_calendar" ||
		pv.Refused[0].MovedTo == nil || !pv.Refused[0].MovedTo.Equal(at(t, "2025-12-26T09:00:00Z")) {
		t.Fatalf("preview %+v", pv)
	}
	var list List[Backfill]
	if b.get("/api/v1/backfills").want(t, http.StatusOK).json(t, &list); len(list.Items) != 0 {
		t.Fatalf("a preview stored a backfill: %+v", list.Items)
	}

	// A backfill started by a plan keeps its calendar and refusals too.
	var pl Plan
	b.send("POST", backfillPathP+"/plan", `{"start":"2025-12-18T00:00:00Z","end":"2025-12-31T23:00:00Z"}`).want(t, http.StatusCreated).json(t, &pl)
	var applied Plan
	b.send("POST", "/api/v1/plans/"+itoa(pl.ID)+"/apply", "").want(t, http.StatusAccepted).json(t, &applied)
	var pgot Backfill
	b.get("/api/v1/backfills/"+itoa(applied.BackfillID)).want(t, http.StatusOK).json(t, &pgot)
	wantTimes(t, pgot.Times, "2025-12-18T09:00:00Z", "2025-12-26T09:00:00Z")
	if pgot.Calendar != "xmas" || pgot.OnHoliday != "next_business_day" || len(pgot.Refused) != 1 ||
		!pgot.Refused[0].Time.Equal(at(t, "2025-12-25T09:00:00Z")) || !pgot.Refused[0].MovedTo.Equal(at(t, "2025-12-26T09:00:00Z")) {
		t.Fatalf("a plan's backfill stored %+v", pgot)
	}

	var bf Backfill
	b.send("POST", backfillPathP, body).want(t, http.StatusCreated).json(t, &bf)
	wantTimes(t, bf.Times, "2025-12-18T09:00:00Z", "2025-12-26T09:00:00Z", "2026-01-02T09:00:00Z", "2026-01-08T09:00:00Z")
	var got Backfill
	b.get("/api/v1/backfills/"+itoa(bf.ID)).want(t, http.StatusOK).json(t, &got)
	if got.Calendar != "xmas" || got.OnHoliday != "next_business_day" || len(got.Refused) != 2 ||
		!got.Refused[1].Time.Equal(at(t, "2026-01-01T09:00:00Z")) || !got.Refused[1].MovedTo.Equal(at(t, "2026-01-02T09:00:00Z")) {
		t.Fatalf("stored %+v", got)
	}

	// A cron given is not the schedule's: no calendar.
	pv = BackfillPreview{}
	b.send("POST", backfillPathP+"/preview", `{"start":"2025-12-18T00:00:00Z","end":"2026-01-08T23:00:00Z","cron":"0 9 * * 4"}`).
		want(t, http.StatusOK).json(t, &pv)
	if pv.Calendar != "" || len(pv.Times) != 4 || len(pv.Refused) != 0 {
		t.Fatalf("own cron %+v", pv)
	}
	// A range the calendar refuses wholly says so and stores nothing.
	e := b.send("POST", backfillPathP, `{"start":"2025-12-25T00:00:00Z","end":"2025-12-25T23:00:00Z"}`).wantError(t, http.StatusBadRequest, CodeBadRequest)
	if !strings.Contains(e.Message, `calendar "xmas"`) || !strings.Contains(e.Message, "refused all 1") {
		t.Fatalf("message %q", e.Message)
	}
	b.send("POST", backfillPathP+"/preview", `{"start":"nope"}`).wantError(t, http.StatusBadRequest, CodeBadRequest)

	// Insiders: view previews and cannot start; another project is hidden.
	ann := b.tokenOf("ann", model.RoleUser)
	b.send("PUT", "/api/v1/projects/p/grants/ann", `{"level":"view"}`).want(t, http.StatusOK)
	b.as(ann, "POST", backfillPathP+"/preview", body).want(t, http.StatusOK)
	b.as(ann, "POST", backfillPathP, body).wantError(t, http.StatusForbidden, CodeForbidden)
	b.as(ann, "POST", "/api/v1/projects/q/workflows/nightly_etl/backfill/preview", body).wantError(t, http.StatusNotFound, CodeNotFound)
	b.as(ann, "POST", "/api/v1/projects", `{"name":"mine"}`).want(t, http.StatusCreated)
	b.as(ann, "POST", "/api/v1/projects/q/workflows/nightly_etl/backfill", body).wantError(t, http.StatusNotFound, CodeNotFound)
}
