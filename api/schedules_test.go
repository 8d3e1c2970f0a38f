package api

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

const schedPath = "/api/v1/projects/p/workflows/nightly_etl/schedule"

// wantDaily checks that times are consecutive days at hh:00 UTC, the first
// within a day after from.
func wantDaily(t *testing.T, from time.Time, hh int, times []Time) {
	t.Helper()
	for i, tm := range times {
		if tm.Location() != time.UTC || tm.Hour() != hh || tm.Minute() != 0 || tm.Second() != 0 || tm.Nanosecond() != 0 {
			t.Fatalf("time %d = %v, want %02d:00:00 UTC", i, tm, hh)
		}
		if i == 0 && (!tm.After(from) || tm.Sub(from) > 24*time.Hour) {
			t.Fatalf("first time %v is not within a day after %v", tm, from)
		}
		if i > 0 && tm.Sub(times[i-1].Time) != 24*time.Hour {
			t.Fatalf("times %v and %v are not a day apart", times[i-1], tm)
		}
	}
}

func TestSchedules(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.mustWorkflow("p")
	before := time.Now()

	// 02:00 in Shanghai (UTC+8, no DST) is 18:00 UTC the day before.
	r := b.send("PUT", schedPath, `{"cron":"0 2 * * *","timezone":"Asia/Shanghai","catchup":"all","priority":"high",
		"worker_group":"gpu","params":{"bizdate":"x"},"by":"ann"}`).want(t, http.StatusCreated)
	var sc Schedule
	r.json(t, &sc)
	if r.header.Get("Location") != schedPath || b.notified.Load() != 1 {
		t.Fatalf("location %q, notified %d", r.header.Get("Location"), b.notified.Load())
	}
	if sc.ID == 0 || sc.Project != "p" || sc.Workflow != "nightly_etl" || sc.Cron != "0 2 * * *" || sc.Timezone != "Asia/Shanghai" ||
		sc.Catchup != "all" || sc.Priority != "high" || sc.WorkerGroup != "gpu" || sc.Params["bizdate"] != "x" || !sc.Enabled ||
		sc.Revision != 0 || sc.UpdatedBy != "admin" || sc.LastFireTime != nil || sc.StartTime != nil || sc.CreatedAt.IsZero() {
		t.Fatalf("created %+v", sc)
	}
	if sc.NextFireTime == nil || len(sc.Upcoming) != upcomingCount || !sc.Upcoming[0].Equal(sc.NextFireTime.Time) {
		t.Fatalf("next %v, upcoming %v", sc.NextFireTime, sc.Upcoming)
	}
	wantDaily(t, before, 18, sc.Upcoming)
	var raw map[string]any
	r.json(t, &raw)
	for _, k := range []string{"next_fire_time", "created_at", "updated_at"} {
		if s, _ := raw[k].(string); !timeRE.MatchString(s) {
			t.Fatalf("%s %q is not RFC 3339 UTC with milliseconds", k, s)
		}
	}

	var got Schedule
	b.get(schedPath).want(t, http.StatusOK).json(t, &got)
	if got.ID != sc.ID || !got.NextFireTime.Equal(sc.NextFireTime.Time) || got.UpdatedBy != "admin" || len(got.Upcoming) != upcomingCount {
		t.Fatalf("get %+v", got)
	}

	// Replace: same id, revision on, every field from the new body.
	r = b.send("PUT", schedPath, `{"cron":"@every 1h","enabled":false}`).want(t, http.StatusOK)
	got = Schedule{} // decoding would keep fields the answer leaves out
	r.json(t, &got)
	if got.ID != sc.ID || got.Revision != 1 || got.Enabled || got.NextFireTime != nil || len(got.Upcoming) != 0 ||
		got.Catchup != "latest" || got.Priority != "" || got.WorkerGroup != "" || len(got.Params) != 0 || got.UpdatedBy != "admin" ||
		got.Timezone != "" || b.notified.Load() != 2 {
		t.Fatalf("replaced %+v", got)
	}
	for _, want := range []string{`"next_fire_time":null`, `"upcoming":[]`, `"params":{}`} {
		if !strings.Contains(string(r.body), want) {
			t.Fatalf("body lacks %s: %s", want, r.body)
		}
	}
	if strings.Contains(string(r.body), `"priority"`) {
		t.Fatalf("priority is not omitted when it follows the workflow: %s", r.body)
	}

	// A window: the fire times inside it only.
	b.send("PUT", schedPath, `{"cron":"*/15 * * * *","start_time":"2099-01-01T00:00:00+08:00","end_time":"2099-01-01T00:40:00+08:00"}`).
		want(t, http.StatusOK).json(t, &got)
	start := time.Date(2098, 12, 31, 16, 0, 0, 0, time.UTC)
	if got.StartTime == nil || !got.StartTime.Equal(start) || got.NextFireTime == nil || !got.NextFireTime.Equal(start) || len(got.Upcoming) != 3 ||
		!got.Upcoming[2].Equal(start.Add(30*time.Minute)) {
		t.Fatalf("window %+v", got)
	}
	// A window that is over: enabled, nothing left to fire.
	b.send("PUT", schedPath, `{"cron":"@daily","start_time":"2000-01-01T00:00:00Z","end_time":"2000-02-01T00:00:00Z"}`).
		want(t, http.StatusOK).json(t, &got)
	if !got.Enabled || got.NextFireTime != nil || len(got.Upcoming) != 0 {
		t.Fatalf("past window %+v", got)
	}

	// A second project; list all, by project, an unknown one.
	b.mustWorkflow("q")
	b.send("PUT", "/api/v1/projects/q/workflows/nightly_etl/schedule", `{"cron":"30 6 * * 1-5"}`).want(t, http.StatusCreated)
	var list List[Schedule]
	b.get("/api/v1/schedules").want(t, http.StatusOK).json(t, &list)
	if len(list.Items) != 2 || list.Items[0].Project != "p" || list.Items[1].Project != "q" || len(list.Items[1].Upcoming) != upcomingCount {
		t.Fatalf("list all %+v", list.Items)
	}
	b.get("/api/v1/schedules?project=q").want(t, http.StatusOK).json(t, &list)
	if len(list.Items) != 1 || list.Items[0].Cron != "30 6 * * 1-5" {
		t.Fatalf("list q %+v", list.Items)
	}
	b.get("/api/v1/schedules?project=nope").want(t, http.StatusOK).json(t, &list)
	if len(list.Items) != 0 {
		t.Fatalf("list nope %+v", list.Items)
	}
	b.get("/api/v1/schedules?project=a%20b").wantError(t, http.StatusBadRequest, CodeBadRequest)

	// 404s: no schedule, no workflow, no project.
	b.putSpec("p", "other", "application/yaml", etlYAML[len("name: nightly_etl\n"):]).want(t, http.StatusCreated)
	for _, tc := range []struct{ method, path, body, want string }{
		{"GET", "/api/v1/projects/p/workflows/other/schedule", "", `schedule of workflow "other"`},
		{"DELETE", "/api/v1/projects/p/workflows/other/schedule", "", `schedule of workflow "other"`},
		{"PUT", "/api/v1/projects/p/workflows/nope/schedule", `{"cron":"@daily"}`, `workflow "nope"`},
		{"PUT", "/api/v1/projects/nope/workflows/nightly_etl/schedule", `{"cron":"@daily"}`, `project "nope"`},
		{"GET", "/api/v1/projects/nope/workflows/nightly_etl/schedule", "", "not found"},
	} {
		e := b.send(tc.method, tc.path, tc.body).wantError(t, http.StatusNotFound, CodeNotFound)
		if !strings.Contains(e.Message, tc.want) {
			t.Fatalf("%s %s: message %q lacks %q", tc.method, tc.path, e.Message, tc.want)
		}
	}

	// Delete.
	if r := b.send("DELETE", schedPath, "").want(t, http.StatusNoContent); len(r.body) != 0 {
		t.Fatalf("204 with body %q", r.body)
	}
	b.get(schedPath).wantError(t, http.StatusNotFound, CodeNotFound)
	b.send("DELETE", schedPath, "").wantError(t, http.StatusNotFound, CodeNotFound)

	// Deleting a workflow deletes its schedule.
	b.send("DELETE", "/api/v1/projects/q/workflows/nightly_etl", "").want(t, http.StatusNoContent)
	b.get("/api/v1/projects/q/workflows/nightly_etl/schedule").wantError(t, http.StatusNotFound, CodeNotFound)
	b.get("/api/v1/schedules").want(t, http.StatusOK).json(t, &list)
	if len(list.Items) != 0 {
		t.Fatalf("schedules left %+v", list.Items)
	}
}

// TestScheduleUpcomingFromNextFire: upcoming starts at the stored next fire
// time, even a past one the master is still catching up on, and goes on
// with the cron's times inside the window; nothing when nothing will fire.
func TestScheduleUpcomingFromNextFire(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := setup(t, options{})
	b.mustWorkflow("p")
	b.send("PUT", schedPath, `{"cron":"0 * * * *"}`).want(t, http.StatusCreated)
	sc, err := b.store.ScheduleGet(ctx, "p", "nightly_etl")
	if err != nil {
		t.Fatal(err)
	}
	behind := time.Date(2020, 1, 1, 5, 0, 0, 0, time.UTC) // a master that fell behind
	sc.NextFireTime = &behind
	if _, _, err := b.store.SchedulePut(ctx, sc, nil); err != nil {
		t.Fatal(err)
	}
	var got Schedule
	b.get(schedPath).want(t, http.StatusOK).json(t, &got)
	if got.NextFireTime == nil || !got.NextFireTime.Equal(behind) || len(got.Upcoming) != upcomingCount {
		t.Fatalf("next %v, upcoming %v", got.NextFireTime, got.Upcoming)
	}
	for i, u := range got.Upcoming {
		if want := behind.Add(time.Duration(i) * time.Hour); !u.Equal(want) {
			t.Fatalf("upcoming[%d] = %v, want %v", i, u, want)
		}
	}

	hour := func(h int) *time.Time { t := behind.Add(time.Duration(h) * time.Hour); return &t }
	for _, tc := range []struct {
		name string
		sc   model.Schedule
		want []*time.Time
	}{
		{"window end", model.Schedule{Cron: "0 * * * *", Enabled: true, NextFireTime: hour(0), EndTime: hour(2)}, []*time.Time{hour(0), hour(1), hour(2)}},
		{"zone", model.Schedule{Cron: "0 2 * * *", Timezone: "Asia/Shanghai", Enabled: true, NextFireTime: hour(13)}, // 18:00 UTC
			[]*time.Time{hour(13), hour(37), hour(61), hour(85), hour(109)}},
		{"disabled", model.Schedule{Cron: "0 * * * *", Enabled: false, NextFireTime: hour(0)}, nil},
		{"nothing left", model.Schedule{Cron: "0 * * * *", Enabled: true}, nil},
		{"cron that no longer parses", model.Schedule{Cron: "0 * * * *", Timezone: "Nowhere/Gone", Enabled: true, NextFireTime: hour(0)}, nil},
	} {
		out := fromSchedule(tc.sc)
		if len(out.Upcoming) != len(tc.want) {
			t.Fatalf("%s: upcoming %v, want %v", tc.name, out.Upcoming, tc.want)
		}
		for i, w := range tc.want {
			if !out.Upcoming[i].Equal(*w) {
				t.Fatalf("%s: upcoming[%d] = %v, want %v", tc.name, i, out.Upcoming[i], *w)
			}
		}
	}
}

func TestScheduleRejects(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.mustWorkflow("p")
	for _, tc := range []struct{ name, contentType, body, want string }{
		{"bad cron", "", `{"cron":"every day"}`, `cron "every day"`},
		{"seven fields", "", `{"cron":"0 0 2 * * * *"}`, "found 7"},
		{"bad field", "", `{"cron":"0 25 * * *"}`, "0 25 * * *"},
		{"bad descriptor", "", `{"cron":"@sometimes"}`, "@sometimes"},
		{"never fires", "", `{"cron":"0 0 30 2 *"}`, "never fires"},
		{"empty cron", "", `{"cron":"  "}`, "cron is required"},
		{"no cron", "", `{"timezone":"UTC"}`, "cron is required"},
		{"long cron", "", `{"cron":"0 2 * * *` + strings.Repeat(" ", 300) + `1"}`, "longer than 255"},
		{"CRON_TZ prefix", "", `{"cron":"CRON_TZ=Asia/Shanghai 0 2 * * *"}`, "give the zone in timezone"},
		{"TZ prefix", "", `{"cron":"TZ=UTC 0 2 * * *"}`, "give the zone in timezone"},
		{"unknown timezone", "", `{"cron":"@daily","timezone":"Mars/Base"}`, `timezone "Mars/Base"`},
		{"Local timezone", "", `{"cron":"@daily","timezone":"Local"}`, `timezone "Local"`},
		{"bad start", "", `{"cron":"@daily","start_time":"tomorrow"}`, `start_time "tomorrow" is not an RFC 3339 time`},
		{"bad end", "", `{"cron":"@daily","end_time":"2026-13-01T00:00:00Z"}`, `end_time "2026-13-01T00:00:00Z"`},
		{"start not a string", "", `{"cron":"@daily","start_time":5}`, `field "start_time"`},
		{"end before start", "", `{"cron":"@daily","start_time":"2026-02-01T00:00:00Z","end_time":"2026-01-01T00:00:00Z"}`, "end_time 2026-01-01T00:00:00Z must be after start_time"},
		{"end equals start", "", `{"cron":"@daily","start_time":"2026-02-01T00:00:00Z","end_time":"2026-02-01T08:00:00+08:00"}`, "must be after start_time"},
		{"bad catchup", "", `{"cron":"@daily","catchup":"sometimes"}`, `catchup "sometimes" is not valid`},
		{"bad priority", "", `{"cron":"@daily","priority":"urgent"}`, `priority "urgent" is not valid`},
		{"bad worker group", "", `{"cron":"@daily","worker_group":"a/b"}`, `worker_group "a/b"`},
		{"bad param name", "", `{"cron":"@daily","params":{"1x":"a","ok":"b","a-b":"c"}}`, `params: "1x", "a-b"`},
		{"bad time param", "", `{"cron":"@daily","params":{"ok":"$[yyyyMMdd]","bizdate":"$[yyyyQQ-1]"}}`, `param "bizdate": $[yyyyQQ-1]: unknown pattern "QQ"`},
		{"param not a string", "", `{"cron":"@daily","params":{"a":1}}`, `field "params"`},
		{"huge params", "", `{"cron":"@daily","params":{"a":"` + strings.Repeat("x", 70000) + `"}}`, "limit is 65535"},
		{"enabled not a bool", "", `{"cron":"@daily","enabled":"yes"}`, `field "enabled"`},
		{"bad by", "", `{"cron":"@daily","by":"` + strings.Repeat("x", 129) + `"}`, `"by" must be`},
		{"unknown field", "", `{"cron":"@daily","schedule":"x"}`, `unknown field "schedule"`},
		{"non-JSON", "application/json", "cron: '@daily'\n", "invalid JSON"},
		{"not an object", "", `["@daily"]`, "invalid JSON"},
		{"trailing data", "", `{"cron":"@daily"} {}`, "data after"},
		{"empty body", "application/json", ``, "empty"},
		{"every problem named", "", `{"cron":"","catchup":"x","priority":"y"}`, `cron is required: use 5 fields`},
		{"bad overlap", "", `{"cron":"@daily","overlap":"queue"}`, `overlap "queue" is not valid: use allow (the default), skip, wait or replace`},
		{"overlap not a string", "", `{"cron":"@daily","overlap":1}`, `field "overlap"`},
		{"@every 0s", "", `{"cron":"@every 0s"}`, `@every 0s is below the 1s minimum`},
		{"@every 1ns", "", `{"cron":"@every 1ns"}`, `@every 1ns is below the 1s minimum`},
		{"@every -1s", "", `{"cron":"@every -1s"}`, `@every -1s is below the 1s minimum`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ct := tc.contentType
			if ct == "" {
				ct = "application/json"
			}
			e := b.do("PUT", schedPath, ct, strings.NewReader(tc.body)).wantError(t, http.StatusBadRequest, CodeBadRequest)
			if !strings.Contains(e.Message, tc.want) {
				t.Fatalf("message %q lacks %q", e.Message, tc.want)
			}
		})
	}
	e := b.send("PUT", schedPath, `{"cron":"","catchup":"x","priority":"y"}`).wantError(t, http.StatusBadRequest, CodeBadRequest)
	for _, want := range []string{"cron is required", `catchup "x"`, `priority "y"`} {
		if !strings.Contains(e.Message, want) {
			t.Fatalf("message %q lacks %q", e.Message, want)
		}
	}
	b.get(schedPath).wantError(t, http.StatusNotFound, CodeNotFound)
	if b.notified.Load() != 0 {
		t.Fatalf("a rejected schedule notified the master %d times", b.notified.Load())
	}
}

// A run fired by a schedule carries it in the instance; a replaced schedule
// does not plan a time it already fired, even one ahead of this clock.
func TestScheduledRun(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	ctx := context.Background()
	b.mustWorkflow("p")
	body := `{"cron":"0 2 * * *","timezone":"Asia/Shanghai","priority":"low","params":{"bizdate":"x"}}`
	b.send("PUT", schedPath, body).want(t, http.StatusCreated)
	sc, err := b.store.ScheduleGet(ctx, "p", "nightly_etl")
	if err != nil {
		t.Fatal(err)
	}
	fired := *sc.NextFireTime // up to a day ahead
	next := fired.Add(24 * time.Hour)
	insts, err := b.store.ScheduleFireOne(ctx, sc, store.Firing{Times: []time.Time{fired}, Next: &next})
	if err != nil || len(insts) != 1 {
		t.Fatalf("fire: %v %v", insts, err)
	}

	var d InstanceDetail
	r := b.get("/api/v1/instances/"+itoa(insts[0].ID)).want(t, http.StatusOK)
	r.json(t, &d)
	if d.ScheduleID != sc.ID || d.Timezone != "Asia/Shanghai" || d.ScheduleTime == nil || !d.ScheduleTime.Equal(fired) ||
		d.CommandType != "scheduled" || d.Priority != "low" || d.Params["bizdate"] != "x" {
		t.Fatalf("scheduled instance %+v", d.Instance)
	}
	manual := b.mustRun("p", "")
	r = b.get("/api/v1/instances/"+itoa(manual.ID)).want(t, http.StatusOK)
	if strings.Contains(string(r.body), `"schedule_id"`) || strings.Contains(string(r.body), `"timezone"`) {
		t.Fatalf("manual run shows schedule fields: %s", r.body)
	}

	var got Schedule
	b.get(schedPath).want(t, http.StatusOK).json(t, &got)
	if got.LastFireTime == nil || !got.LastFireTime.Equal(fired) || got.Revision != 1 {
		t.Fatalf("after the fire %+v", got)
	}
	b.send("PUT", schedPath, body).want(t, http.StatusOK).json(t, &got)
	if got.NextFireTime == nil || !got.NextFireTime.Equal(next) || !got.LastFireTime.Equal(fired) {
		t.Fatalf("replaced after a fire: next %v, want %v", got.NextFireTime, next)
	}
}

// TestScheduleStaleEditIsRefused: a PUT that sends the version it read is
// refused with 409 once another edit landed, and changes nothing.
func TestScheduleStaleEditIsRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.mustWorkflow("p")
	var sc Schedule
	b.send("PUT", schedPath, `{"cron":"0 2 * * *","version":0}`).want(t, http.StatusCreated).json(t, &sc)
	b.send("PUT", schedPath, `{"cron":"0 3 * * *","version":0,"by":"ann"}`).want(t, http.StatusOK).json(t, &sc)
	if sc.Version != 1 || sc.Cron != "0 3 * * *" {
		t.Fatalf("after one edit: %+v", sc)
	}
	e := b.send("PUT", schedPath, `{"cron":"0 4 * * *","version":0,"by":"bob"}`).wantError(t, http.StatusConflict, CodeConflict)
	if !strings.Contains(e.Message, "version 1") || !strings.Contains(e.Message, "by admin") {
		t.Fatalf("message %q", e.Message)
	}
	b.get(schedPath).want(t, http.StatusOK).json(t, &sc)
	if sc.Cron != "0 3 * * *" || sc.Version != 1 {
		t.Fatalf("the stale edit changed the schedule: %+v", sc)
	}
}

// TestScheduleOverlap: the overlap policy is stored, answered, kept by a
// read-modify-write, and defaults to allow; skipped fires are answered.
func TestScheduleOverlap(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.mustWorkflow("p")
	var sc Schedule
	b.send("PUT", schedPath, `{"cron":"@hourly"}`).want(t, http.StatusCreated).json(t, &sc)
	if sc.Overlap != "allow" || sc.SkippedFires != 0 || sc.LastSkippedTime != nil {
		t.Fatalf("default: %+v", sc)
	}
	for _, o := range []string{"skip", "wait", "replace", "allow"} {
		b.send("PUT", schedPath, `{"cron":"@hourly","overlap":"`+o+`"}`).want(t, http.StatusOK).json(t, &sc)
		var got Schedule
		b.get(schedPath).want(t, http.StatusOK).json(t, &got)
		if sc.Overlap != o || got.Overlap != o || got.Request().Overlap != o {
			t.Fatalf("overlap %s: put %q, get %q", o, sc.Overlap, got.Overlap)
		}
	}
	var raw map[string]any
	b.get(schedPath).want(t, http.StatusOK).json(t, &raw)
	if _, ok := raw["last_skipped_time"]; !ok || raw["skipped_fires"] != float64(0) {
		t.Fatalf("skipped fields: %v", raw)
	}
}

// TestMaxActiveRunsIsValidated: max_active_runs in a spec is a positive
// integer; anything else is a 400 naming it.
func TestMaxActiveRunsIsValidated(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.mustProject("p")
	const tasks = "tasks:\n  - {name: a, command: \"true\"}\n"
	for _, v := range []string{"0", "-2", "many"} {
		e := b.putSpec("p", "capped", "application/yaml", "name: capped\nmax_active_runs: "+v+"\n"+tasks).
			wantError(t, http.StatusBadRequest, CodeBadRequest)
		if !strings.Contains(e.Message, "max_active_runs") {
			t.Fatalf("max_active_runs %s: %q", v, e.Message)
		}
	}
	b.putSpec("p", "capped", "application/yaml", "name: capped\nmax_active_runs: 3\n"+tasks).want(t, http.StatusCreated)
}
