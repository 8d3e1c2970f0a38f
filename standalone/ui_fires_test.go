package standalone_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/testkit/wait"
)

// TestWebUIFiresCompensate: a per-second schedule paused for a few
// seconds lists those seconds missed on its panel when resumed; "Compensate
// missed" shows the runs it would make, then runs each once, and the rows
// turn compensated with their runs.
func TestWebUIFiresCompensate(t *testing.T) {
	t.Parallel()
	e := start(t, "")
	e.apply("name: fired\ntasks:\n  - {name: a, command: \"true\"}\n")
	const path = "/api/v1/projects/demo/workflows/fired/schedule"
	var sc struct {
		ID int64 `json:"id"`
	}
	e.do("PUT", path, `{"cron":"* * * * * *","catchup":"none","enabled":false}`, http.StatusCreated, &sc)
	paused := time.Now()
	wait.Until(t, 10*time.Second, "a few seconds paused", func() bool { return time.Since(paused) > 3*time.Second })
	e.do("PUT", path, `{"cron":"* * * * * *","catchup":"none","enabled":true}`, http.StatusOK, nil)
	e.do("PUT", path, `{"cron":"* * * * * *","catchup":"none","enabled":false}`, http.StatusOK, nil)
	fires := fmt.Sprintf("/api/v1/projects/demo/schedules/%d/fires", sc.ID)
	type fireList struct {
		Items []struct {
			Outcome string `json:"outcome"`
			Run     *int64 `json:"workflow_instance_id"`
		} `json:"items"`
	}
	var missed fireList
	e.do("GET", fires+"?outcome=missed", "", http.StatusOK, &missed)
	if n := len(missed.Items); n < 3 || n > 6 {
		t.Fatalf("%d missed fires over a pause of %v", n, time.Since(paused))
	}
	n := len(missed.Items)

	b := newBrowser(t, e.base, e.sessionToken())
	b.step(t, 90*time.Second, func(s *session) {
		s.open("#/workflows/demo/fired")
		s.until("the missed fires listed", fmt.Sprintf(`document.querySelectorAll('#schedule-fires .fire-outcome.missed').length === %d`, n))
		s.click(`#fires-compensate`)
		s.until("the preview", `!!document.querySelector('dialog.dialog button.ok')`)
		if txt := s.text(`dialog.dialog`); !strings.Contains(txt, fmt.Sprintf("Run %d missed fire(s)?", n)) {
			t.Fatalf("the preview says %q", txt)
		}
		s.click(`dialog.dialog button.ok`)
		s.until("the fires compensated", fmt.Sprintf(`document.querySelectorAll('#schedule-fires .fire-outcome.compensated').length === %d &&
			!document.querySelector('#schedule-fires .fire-outcome.missed') &&
			document.querySelectorAll('#schedule-fires tr.fire-compensated a[href^="#/instances/"]').length === %d`, n, n))
	})
	var done fireList
	e.do("GET", fires+"?outcome=compensated", "", http.StatusOK, &done)
	if len(done.Items) != n {
		t.Fatalf("%d compensated, want %d", len(done.Items), n)
	}
	for _, f := range done.Items {
		if f.Run == nil {
			t.Fatalf("a compensated fire without its run: %+v", done.Items)
		}
		e.wait(*f.Run, time.Minute)
	}
}
