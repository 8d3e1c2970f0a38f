package standalone_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp/kb"
)

// TestWebUIWorkflowSettings: a person, typing every value, adds a
// datasource and an alert channel on their own pages and tests each with
// its button (a good and a bad datasource; the channel's script really
// runs), then sets every workflow-level setting of a spec on the editor's
// Settings tab and saves; the stored spec holds them. The YAML tab shows
// the spec without the defaults the server spelled in, and says a
// comment typed there is not stored.
func TestWebUIWorkflowSettings(t *testing.T) {
	t.Parallel()
	e := start(t, "")
	dir := t.TempDir()
	db := filepath.Join(dir, "wh.db")
	if err := os.WriteFile(db, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	alertFile := filepath.Join(dir, "alert.json")
	e.apply("name: etl\ntasks:\n  - {name: load, command: \"echo load\"}\n  - {name: check, command: \"echo ok\", depends_on: [load], timeout: 1m}\n")

	b := newBrowser(t, e.base, e.sessionToken())
	b.step(t, 90*time.Second, func(s *session) {
		s.open("#/datasources")
		s.until("the datasources page", `!!document.querySelector('#datasource-form') && !!document.querySelector('table.datasources tr.empty')`)
		add := func(name, path string) {
			s.typeInto(`#ds-name`, name, false)
			s.choose(`#ds-type`, "sq")
			s.until("the sqlite form", `!document.querySelector('#ds-host') && document.querySelector('#ds-type').value === 'sqlite'`)
			s.typeInto(`#ds-database`, path, false)
			s.click(`#ds-save`)
			s.until("the row of "+name, `!!document.querySelector('tr[data-datasource=`+name+`]')`)
		}
		add("wh", db)
		add("gone", filepath.Join(dir, "missing.db"))
		s.click(`button[data-test=wh]`)
		s.until("wh connects", `document.querySelector('tr[data-datasource=wh] .testok')?.textContent.includes('connected')`)
		s.click(`button[data-test=gone]`)
		s.until("gone fails, saying why", `document.querySelector('tr[data-datasource=gone] .testbad')?.textContent.length > 3`)
	})
	var ds struct{ Type, Database string }
	e.do("GET", "/api/v1/datasources/wh", "", http.StatusOK, &ds)
	if ds.Type != "sqlite" || ds.Database != db {
		t.Fatalf("stored datasource %+v", ds)
	}

	b.step(t, 90*time.Second, func(s *session) {
		s.open("#/alert-channels")
		s.until("the alert channels page", `!!document.querySelector('#channel-form')`)
		s.typeInto(`#ch-name`, "ops", false)
		s.choose(`#ch-kind`, "sc")
		s.until("the script form", `!!document.querySelector('#ch-command')`)
		s.typeInto(`#ch-command`, "cat > "+alertFile, false)
		s.click(`#ch-save`)
		s.until("the row of ops", `!!document.querySelector('tr[data-channel=ops]')`)
		s.click(`button[data-test=ops]`)
		s.until("the test alert sent", `document.querySelector('tr[data-channel=ops] .testok')?.textContent.includes('sent')`)
	})
	if got, err := os.ReadFile(alertFile); err != nil || !strings.Contains(string(got), "test") {
		t.Fatalf("the channel's script got %q (%v)", got, err)
	}

	b.step(t, 120*time.Second, func(s *session) {
		s.open("#/edit/demo/etl")
		s.until("the editor", `!!document.querySelector('#view-settings') && !!document.querySelector('.editflow .node')`)
		s.click(`#view-settings`)
		s.until("the settings form", `!!document.querySelector('.wfform')`)
		wf := func(k, tag string) string { return `.wfform .field[data-field=` + k + `] ` + tag }
		s.click(`.wfform button[data-add=Params]`)
		s.typeInto(`.wfform [aria-label="Params name 1"]`, "REGION", false)
		s.typeInto(`.wfform [aria-label="Params value 1"]`, "eu", false)
		s.click(`.wfform button[data-add=Params]`)
		s.typeInto(`.wfform [aria-label="Params name 2"]`, "TOKEN", false)
		s.typeInto(`.wfform [aria-label="Params value 2"]`, "s3cr3t", false)
		s.click(`.wfform .kvrow:nth-of-type(2) .secret input`)
		s.choose(wf("failure_strategy", "select"), "co")
		s.typeInto(wf("max_active_runs", "input"), "2", false)
		s.typeInto(wf("timeout", "input"), "2h", false)
		s.choose(wf("timeout_strategy", "select"), "st")
		s.choose(wf("priority", "select"), "low")
		s.typeInto(wf("worker_group", "input"), "etl", false)
		s.until("the channel to pick", `!!document.querySelector('.wfform input[name=alert_channel][value=ops]')`)
		s.click(`.wfform input[name=alert_on][value=failure]`)
		// One trigger without a channel is a problem named on the form.
		s.until("the missing channel named", `document.querySelector('.wfform .alertsfield .fielderr')?.textContent.includes('channel')`)
		s.click(`.wfform input[name=alert_channel][value=ops]`)
		s.typeInto(wf("deadline", "input"), "06:00", false)
		for sel, want := range map[string]string{
			wf("failure_strategy", "select"): "continue", wf("max_active_runs", "input"): "2", wf("timeout", "input"): "2h",
			wf("timeout_strategy", "select"): "stop", wf("priority", "select"): "low", wf("worker_group", "input"): "etl",
			wf("deadline", "input"): "06:00", `.wfform [aria-label="Params value 2"]`: "s3cr3t",
		} {
			if got := s.value(sel); got != want {
				t.Fatalf("%s holds %q after typing %q", sel, got, want)
			}
		}
		s.click(`#save-spec`)
		s.until("the workflow page", `location.hash === '#/workflows/demo/etl'`)
	})
	var wf struct {
		Version int
		Spec    struct {
			Params          map[string]string `json:"params"`
			SecretParams    []string          `json:"secret_params"`
			FailureStrategy string            `json:"failure_strategy"`
			MaxActiveRuns   int               `json:"max_active_runs"`
			Timeout         string            `json:"timeout"`
			TimeoutStrategy string            `json:"timeout_strategy"`
			Priority        string            `json:"priority"`
			WorkerGroup     string            `json:"worker_group"`
			Deadline        string            `json:"deadline"`
			Alerts          struct{ On, Channels []string }
		}
	}
	e.do("GET", "/api/v1/projects/demo/workflows/etl", "", http.StatusOK, &wf)
	got, _ := json.Marshal(wf.Spec)
	sp := wf.Spec
	if wf.Version != 2 || sp.Params["REGION"] != "eu" || sp.Params["TOKEN"] != "***" || len(sp.SecretParams) != 1 || sp.SecretParams[0] != "TOKEN" ||
		sp.FailureStrategy != "continue" || sp.MaxActiveRuns != 2 || sp.Timeout != "2h0m0s" || sp.TimeoutStrategy != "stop" || sp.Priority != "low" ||
		sp.WorkerGroup != "etl" || sp.Deadline != "06:00" || strings.Join(sp.Alerts.On, ",") != "failure" || strings.Join(sp.Alerts.Channels, ",") != "ops" {
		t.Fatalf("stored v%d spec %s", wf.Version, got)
	}

	b.step(t, 60*time.Second, func(s *session) {
		s.open("#/edit/demo/etl")
		s.until("the editor", `!!document.querySelector('.editflow .node')`)
		s.click(`#view-yaml`)
		s.until("the YAML", `document.querySelector('#spec')?.value.includes('max_active_runs: 2')`)
		var yaml string
		s.eval(`document.querySelector('#spec').value`, &yaml)
		for _, bad := range []string{"type: shell", "priority: medium", "timeout_strategy: fail"} {
			if strings.Contains(yaml, bad) {
				t.Fatalf("the YAML tab spells the default %q:\n%s", bad, yaml)
			}
		}
		if !strings.Contains(yaml, "failure_strategy: continue") || !strings.Contains(yaml, "priority: low") {
			t.Fatalf("the YAML tab lost a setting:\n%s", yaml)
		}
		// A comment typed is said not to be stored.
		s.until("no comment warning yet", `!document.querySelector('#yaml-comments strong')`)
		s.click(`#spec`)
		s.keys(kb.End, input.ModifierCtrl)
		s.keys(kb.Enter + "# nightly")
		s.until("the comment warning", `document.querySelector('#yaml-comments strong')?.textContent.includes('not stored')`)
	})
}
