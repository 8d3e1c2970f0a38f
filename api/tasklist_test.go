package api

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
)

// TestTaskInstanceList: the attempts of runs in two projects, listed
// newest first and narrowed by each filter; a bad filter is refused with
// a message naming it.
func TestTaskInstanceList(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	ctx := context.Background()
	t0 := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	for pi, p := range []string{"alpha", "beta"} {
		b.mustWorkflow(p)
		inst := b.mustRun(p, "")
		if _, err := b.store.InstanceClaimCommands(ctx, "master-1:5678", 1, 1); err != nil {
			t.Fatal(err)
		}
		var rows []*model.TaskInstance
		for i := range 4 {
			start := t0.Add(time.Duration(pi*4+i) * time.Hour)
			end := start.Add(time.Minute)
			tk := &model.TaskInstance{WorkflowInstanceID: inst.ID, Name: fmt.Sprintf("load_%d", i), Type: "shell",
				State: model.TaskSucceeded, Attempt: 1, Host: fmt.Sprintf("w%d:1234", i%2), SubmitTime: &start, StartTime: &start, EndTime: &end}
			if i == 3 {
				tk.Name, tk.State = "report_%x", model.TaskFailed
			}
			rows = append(rows, tk)
		}
		if err := b.store.TaskInsert(ctx, rows); err != nil {
			t.Fatal(err)
		}
	}
	list := func(query string) TaskInstanceList {
		t.Helper()
		var l TaskInstanceList
		b.get("/api/v1/task-instances?"+query).want(t, http.StatusOK).json(t, &l)
		return l
	}
	names := func(l TaskInstanceList) string {
		var out []string
		for _, it := range l.Items {
			out = append(out, it.Project+"/"+it.Name)
		}
		return strings.Join(out, " ")
	}
	all := list("")
	if all.Total != 8 || len(all.Items) != 8 || all.Items[0].ID < all.Items[7].ID || all.Items[0].Workflow != "nightly_etl" {
		t.Fatalf("all: total %d, %s", all.Total, names(all))
	}
	for q, want := range map[string]string{
		"project=beta":                  "beta/report_%x beta/load_2 beta/load_1 beta/load_0",
		"state=failed":                  "beta/report_%x alpha/report_%x",
		"host=w1:1234&project=alpha":    "alpha/report_%x alpha/load_1",
		"name=" + url.QueryEscape("_%"): "beta/report_%x alpha/report_%x", // % and _ match themselves
		"name=load_1":                   "beta/load_1 alpha/load_1",
		"from=2026-12-06T11:00:00Z&to=2026-12-06T13:00:00Z": "alpha/report_%x alpha/load_2",
		"workflow=nightly_etl&limit=2&offset=1":             "beta/load_2 beta/load_1",
		"workflow=other":                                    "",
		"latest=true&project=alpha&state=succeeded":         "alpha/load_2 alpha/load_1 alpha/load_0",
	} {
		if got := names(list(q)); got != want {
			t.Errorf("?%s: %q, want %q", q, got, want)
		}
	}
	for q, want := range map[string]string{
		"state=done":     "not a task state",
		"from=yesterday": "from: \"yesterday\" is not an RFC 3339 time",
		"from=2026-12-07T00:00:00Z&to=2026-12-06T00:00:00Z": "must be before",
		"latest=yes":             "latest",
		"project=Not%20A%20Name": "query parameter project",
		"limit=0":                "limit",
	} {
		e := b.get("/api/v1/task-instances?"+q).wantError(t, http.StatusBadRequest, CodeBadRequest)
		if !strings.Contains(e.Message, want) {
			t.Errorf("?%s: %q, want it to say %q", q, e.Message, want)
		}
	}
}
