package api

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/common/model"
)

// TestDatasetRoutes: a consumer's spec shows in the list and the
// dataset; an event posted with a key records once (201, then 200);
// bad input is a 400 naming the problem and records nothing.
func TestDatasetRoutes(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.mustProject("p")
	b.putSpec("p", "daily", "application/yaml", "name: daily\non_datasets: [orders@daily]\nlate_data: rerun\ntasks:\n  - {name: a, command: x, produces: [\"report@${bizdate}\"]}\n").
		want(t, http.StatusCreated)
	b.putSpec("p", "bad", "application/yaml", "name: bad\non_datasets: [orders@weekly]\ntasks:\n  - {name: a, command: x}\n").
		wantError(t, http.StatusBadRequest, CodeBadRequest)
	base := "/api/v1/projects/p/datasets"
	var l DatasetList
	b.get(base).want(t, http.StatusOK).json(t, &l)
	if len(l.Datasets) != 2 || l.Datasets[0].Name != "orders" || len(l.Datasets[0].Consumers) != 1 || l.Datasets[0].Consumers[0].LateData != "rerun" ||
		l.Datasets[1].Name != "report" || l.Datasets[1].Producers[0].Task != "a" {
		t.Fatalf("list: %+v", l)
	}
	post := func(path, body, key string) resp {
		return b.request("POST", path, "", "application/json", strings.NewReader(body), "Idempotency-Key", key)
	}
	var r DatasetEventResult
	post(base+"/orders/events", `{"partition":"20261207"}`, "k1").want(t, http.StatusCreated).json(t, &r)
	if r.Duplicate || r.Event.Partition != "2026-12-07" || r.Event.ProducedBy == "" {
		t.Fatalf("event: %+v", r)
	}
	post(base+"/orders/events", `{"partition":"2026-12-07"}`, "k1").want(t, http.StatusOK).json(t, &r)
	if !r.Duplicate {
		t.Fatalf("the key again: %+v", r)
	}
	for _, c := range []struct{ path, body, want string }{
		{base + "/orders/events", `{"partition":"2026-13-07"}`, "use a day"},
		{base + "/orders/events", `{}`, "partition is required"},
		{base + "/orders/events", `{"partition":"2026-12-07","x":1}`, `unknown field "x"`},
		{base + "/9orders/events", `{"partition":"2026-12-07"}`, "starting with a letter"},
	} {
		e := post(c.path, c.body, "").wantError(t, http.StatusBadRequest, CodeBadRequest)
		if !strings.Contains(e.Message, c.want) {
			t.Errorf("%s %s: %q, want %q", c.path, c.body, e.Message, c.want)
		}
	}
	var d DatasetDetail
	b.get(base+"/orders").want(t, http.StatusOK).json(t, &d)
	if d.Partitions != 1 || len(d.PartitionList) != 1 || len(d.PartitionList[0].Events) != 1 {
		t.Fatalf("orders after the bad posts: %+v", d)
	}
	b.get(base+"/nope").wantError(t, http.StatusNotFound, CodeNotFound)
	b.get(base+"/orders?limit=0").wantError(t, http.StatusBadRequest, CodeBadRequest)
	var fl DatasetFireList
	b.get("/api/v1/projects/p/workflows/daily/dataset-fires").want(t, http.StatusOK).json(t, &fl)
	if fl.Fires == nil {
		t.Fatal("fires: null, want a list")
	}
}

// TestDatasetAccess: outsiders get 401; a plain user with her own project
// sees none of another's datasets (404) and posts no event there; a
// viewer reads datasets, the ledger and a run's lineage but posts no
// event (403); operate posts events.
func TestDatasetAccess(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.mustWorkflow("p")
	inst := b.mustRun("p", "")
	base := "/api/v1/projects/p/datasets"
	b.send("POST", base+"/orders/events", `{"partition":"2026-12-07"}`).want(t, http.StatusCreated)
	reads := []string{base, base + "/orders", "/api/v1/projects/p/workflows/nightly_etl/dataset-fires", fmt.Sprintf("/api/v1/instances/%d/datasets", inst.ID)}
	write := [3]string{"POST", base + "/orders/events", `{"partition":"2026-12-08"}`}
	for _, p := range reads {
		b.as("", "GET", p, "").wantError(t, http.StatusUnauthorized, CodeUnauthorized)
	}
	b.as("", write[0], write[1], write[2]).wantError(t, http.StatusUnauthorized, CodeUnauthorized)
	ann := b.tokenOf("ann", model.RoleUser)
	b.as(ann, "POST", "/api/v1/projects", `{"name":"mine"}`).want(t, http.StatusCreated)
	b.as(ann, "POST", "/api/v1/projects/mine/datasets/orders/events", `{"partition":"2026-12-07"}`).want(t, http.StatusCreated)
	b.as(ann, "GET", "/api/v1/projects/mine/datasets", "").want(t, http.StatusOK)
	for _, p := range reads {
		b.as(ann, "GET", p, "").wantError(t, http.StatusNotFound, CodeNotFound)
	}
	b.as(ann, write[0], write[1], write[2]).wantError(t, http.StatusNotFound, CodeNotFound)
	b.send("PUT", "/api/v1/projects/p/grants/ann", `{"level":"view"}`).want(t, http.StatusOK)
	for _, p := range reads {
		b.as(ann, "GET", p, "").want(t, http.StatusOK)
	}
	b.as(ann, write[0], write[1], write[2]).wantError(t, http.StatusForbidden, CodeForbidden)
	b.send("PUT", "/api/v1/projects/p/grants/ann", `{"level":"operate"}`).want(t, http.StatusOK)
	b.as(ann, write[0], write[1], write[2]).want(t, http.StatusCreated)
	var d DatasetDetail
	b.get(base+"/orders").want(t, http.StatusOK).json(t, &d)
	if d.Partitions != 2 {
		t.Fatalf("orders: %+v, want the admin's and ann's partitions only", d)
	}
}

// TestDatasetEventPlan: the plan of a dataset event names the consumer it
// runs and why another gets nothing, records no event; its apply posts the
// event (operate on the project; an outsider 401, a plain user 404, a
// viewer 403); a plan whose key was posted meanwhile is refused, naming it.
func TestDatasetEventPlan(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.mustProject("p")
	b.putSpec("p", "daily", "application/yaml", "name: daily\non_datasets: [orders@daily]\ntasks:\n  - {name: a, command: x}\n").want(t, http.StatusCreated)
	b.putSpec("p", "joined", "application/yaml", "name: joined\non_datasets: [orders@daily, refs@daily]\ntasks:\n  - {name: a, command: x}\n").want(t, http.StatusCreated)
	route := "/api/v1/projects/p/datasets/orders/events/plan"
	for _, bad := range []string{`{}`, `{"partition":"yesterday"}`, `{"partition":"2026-12-07","x":1}`, `nope`} {
		b.send("POST", route, bad).wantError(t, http.StatusBadRequest, CodeBadRequest)
	}
	b.send("POST", "/api/v1/projects/p/datasets/9bad/events/plan", `{"partition":"2026-12-07"}`).wantError(t, http.StatusBadRequest, CodeBadRequest)

	var p Plan
	b.send("POST", route, `{"partition":"2026-12-07"}`).want(t, http.StatusCreated).json(t, &p)
	if p.Action != "dataset_emit" || len(p.Instances) != 1 || p.Instances[0].Workflow != "daily" || !p.Instances[0].New ||
		len(p.Conflicts) != 1 || !strings.Contains(p.Conflicts[0].What, "p/joined: no run: inputs not all ready") || p.Blocked ||
		p.Emit == nil || p.Emit.Partition != "2026-12-07" || len(p.Instances[0].Tasks) != 1 || p.Instances[0].Tasks[0].Name != "a" ||
		p.Estimate.P50 <= 0 || p.Instances[0].Estimate.P90 < p.Instances[0].Estimate.P50 {
		t.Fatalf("plan %+v", p)
	}
	var d DatasetDetail
	if b.get("/api/v1/projects/p/datasets/orders").want(t, http.StatusOK).json(t, &d); d.Partitions != 0 {
		t.Fatalf("a plan posted an event: %+v", d)
	}

	// Who may plan and apply.
	b.as("", "POST", route, `{"partition":"2026-12-07"}`).wantError(t, http.StatusUnauthorized, CodeUnauthorized)
	ann := b.tokenOf("ann", model.RoleUser)
	b.as(ann, "POST", "/api/v1/projects", `{"name":"mine"}`).want(t, http.StatusCreated)
	b.as(ann, "POST", route, `{"partition":"2026-12-07"}`).wantError(t, http.StatusNotFound, CodeNotFound)
	b.as(ann, "POST", "/api/v1/plans/"+itoa(p.ID)+"/apply", "").wantError(t, http.StatusNotFound, CodeNotFound)
	b.send("PUT", "/api/v1/projects/p/grants/ann", `{"level":"view"}`).want(t, http.StatusOK)
	b.as(ann, "POST", route, `{"partition":"2026-12-07"}`).wantError(t, http.StatusForbidden, CodeForbidden)
	if e := b.as(ann, "POST", "/api/v1/plans/"+itoa(p.ID)+"/apply", "").wantError(t, http.StatusForbidden, CodeForbidden); !strings.Contains(e.Message, `project "p"`) {
		t.Fatalf("a viewer's apply: %q", e.Message)
	}
	b.send("PUT", "/api/v1/projects/p/grants/ann", `{"level":"operate"}`).want(t, http.StatusOK)
	var applied Plan
	b.as(ann, "POST", "/api/v1/plans/"+itoa(p.ID)+"/apply", "").want(t, http.StatusAccepted).json(t, &applied)
	if applied.EventID == 0 {
		t.Fatalf("applied %+v", applied)
	}
	if b.get("/api/v1/projects/p/datasets/orders").want(t, http.StatusOK).json(t, &d); d.Partitions != 1 {
		t.Fatalf("after the apply: %+v", d)
	}

	// Planned with a key that is then posted: refused, naming the key.
	var k Plan
	b.request("POST", route, "", "application/json", strings.NewReader(`{"partition":"2026-12-08"}`), HeaderIdempotencyKey, "k-8").
		want(t, http.StatusCreated).json(t, &k)
	b.request("POST", "/api/v1/projects/p/datasets/orders/events", "", "application/json", strings.NewReader(`{"partition":"2026-12-08"}`),
		HeaderIdempotencyKey, "k-8").want(t, http.StatusCreated)
	if e := b.send("POST", "/api/v1/plans/"+itoa(k.ID)+"/apply", "").wantError(t, http.StatusConflict, CodeConflict); !strings.Contains(e.Message, `key "k-8": was not posted, now posted`) {
		t.Fatalf("stale apply: %q", e.Message)
	}
}
