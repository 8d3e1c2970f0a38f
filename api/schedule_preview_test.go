package api

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestSchedulePreview: the next fire times of a cron in its zone, in UTC;
// bad input is a 400 naming it; any logged-in user may ask; nothing stored.
func TestSchedulePreview(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	const path = "/api/v1/schedule-preview"

	// 02:00 in Shanghai (UTC+8) is 18:00 UTC the day before.
	before := time.Now()
	var p SchedulePreview
	b.send("POST", path, `{"cron":"0 2 * * *","timezone":"Asia/Shanghai"}`).want(t, http.StatusOK).json(t, &p)
	if p.Cron != "0 2 * * *" || p.Timezone != "Asia/Shanghai" || len(p.Times) != upcomingCount {
		t.Fatalf("preview %+v", p)
	}
	wantDaily(t, before, 18, p.Times)

	// count and from: 3 hourly times after a fixed instant.
	p = SchedulePreview{}
	b.send("POST", path, `{"cron":"@hourly","count":3,"from":"2026-03-01T10:30:00Z"}`).want(t, http.StatusOK).json(t, &p)
	want := []string{"2026-03-01T11:00:00Z", "2026-03-01T12:00:00Z", "2026-03-01T13:00:00Z"}
	if len(p.Times) != len(want) {
		t.Fatalf("times %v, want %v", p.Times, want)
	}
	for i, w := range want {
		if p.Times[i].Format(time.RFC3339) != w {
			t.Fatalf("time %d = %v, want %s", i, p.Times[i], w)
		}
	}

	for _, c := range []struct{ body, says string }{
		{`{"cron":"61 * * * *"}`, `cron "61 * * * *"`},
		{`{"cron":"0 2 * * *","timezone":"Mars/Olympus"}`, "Mars/Olympus"},
		{`{"cron":""}`, "cron is required"},
		{`{"cron":"@daily","count":500}`, "count 500"},
		{`{"cron":"@daily","count":-1}`, "count -1"},
		{`not json`, ""},
	} {
		e := b.send("POST", path, c.body).wantError(t, http.StatusBadRequest, "bad_request")
		if !strings.Contains(e.Message, c.says) {
			t.Fatalf("%s: %q does not say %q", c.body, e.Message, c.says)
		}
	}

	// A user with no grant at all may preview; anonymous may not.
	tok := b.tokenOf("nobody", "user")
	b.as(tok, "POST", path, `{"cron":"@daily"}`).want(t, http.StatusOK)
	b.as("", "POST", path, `{"cron":"@daily"}`).want(t, http.StatusUnauthorized)
}
