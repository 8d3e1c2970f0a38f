package api

import (
	"net/http"
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/common/model"
)

// hook posts body to a trigger's hook with the header pairs given, with no
// user's token.
func (b *bundle) hook(path, body string, header ...string) resp {
	b.t.Helper()
	return b.request("POST", path, "", "application/json", strings.NewReader(body), append([]string{"Authorization", ""}, header...)...)
}

func (b *bundle) deliveries(path string) []TriggerDelivery {
	b.t.Helper()
	var l List[TriggerDelivery]
	b.get(path+"/deliveries").want(b.t, http.StatusOK).json(b.t, &l)
	return l.Items
}

// TestTriggerDeliveries: a trigger is made (its token shown once), a
// delivery with a key starts one run with the mapped params, its retry is
// a duplicate naming the same run, and every refusal (wrong token, bad
// JSON, a missing field, a reserved param, disabled, oversize) is a 4xx
// naming it, recorded with its reason, starting nothing; an unknown
// trigger is a 404 recorded nowhere. Rotation retires the old token.
func TestTriggerDeliveries(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.mustWorkflow("p")
	base := "/api/v1/projects/p/workflows/nightly_etl/triggers"
	for _, bad := range []struct{ body, says string }{
		{`{"name":"bad name"}`, "trigger name"},
		{`{"name":"gh","params":{"PATH":"x"}}`, "reserved"},
		{`{"name":"gh","params":{"ref":""}}`, "path into the request JSON is empty"},
		{`{"name":"gh","parms":{}}`, "unknown field"},
	} {
		e := b.send("POST", base, bad.body).wantError(t, http.StatusBadRequest, CodeBadRequest)
		if !strings.Contains(e.Message, bad.says) {
			t.Fatalf("%s: message %q, want it to say %q", bad.body, e.Message, bad.says)
		}
	}
	b.send("POST", "/api/v1/projects/p/workflows/nope/triggers", `{"name":"gh"}`).wantError(t, http.StatusNotFound, CodeNotFound)
	var nt NewTrigger
	b.send("POST", base, `{"name":"gh","params":{"bizdate":"head_commit.date","ref":"ref"}}`).want(t, http.StatusCreated).json(t, &nt)
	if !strings.HasPrefix(nt.Token, "blgt_") || !nt.Enabled || nt.HookPath != HookPath(nt.ID) || nt.CreatedBy != "admin" {
		t.Fatalf("created %+v", nt)
	}
	b.send("POST", base, `{"name":"gh"}`).wantError(t, http.StatusConflict, CodeConflict)
	var got Trigger
	b.get(base+"/gh").want(t, http.StatusOK).json(t, &got)
	if got.ID != nt.ID || got.Params["ref"] != "ref" || strings.Contains(string(b.get(base+"/gh").body), nt.Token) {
		t.Fatalf("read back %+v", got)
	}
	path := base + "/gh"
	payload := `{"ref":"refs/heads/main","head_commit":{"date":"20261201"}}`
	auth := "Bearer " + nt.Token

	// Accepted, then its retry: one run.
	r := b.hook(nt.HookPath, payload, "Authorization", auth, "Idempotency-Key", "d-1").want(t, http.StatusCreated)
	var d1 TriggerDelivery
	r.json(t, &d1)
	if d1.Outcome != model.DeliveryAccepted || d1.RunID == 0 || r.header.Get("Location") != "/api/v1/instances/"+itoa(d1.RunID) {
		t.Fatalf("accepted %+v %v", d1, r.header)
	}
	inst := b.detail(d1.RunID)
	if inst.CommandType != string(model.CommandTriggered) || inst.Params["ref"] != "refs/heads/main" || inst.Params["bizdate"] != "20261201" {
		t.Fatalf("the run %+v", inst.Instance)
	}
	var d2 TriggerDelivery
	// X-Beluga-Token wins over an Authorization a proxy may add.
	b.hook(nt.HookPath, payload, "Authorization", "Basic cHJveHk6eA==", HeaderTriggerToken, nt.Token, "Idempotency-Key", "d-1").
		want(t, http.StatusOK).json(t, &d2)
	if d2.Outcome != model.DeliveryDuplicate || d2.RunID != d1.RunID {
		t.Fatalf("the retry %+v, want a duplicate of run %d", d2, d1.RunID)
	}

	// Refusals: each a 4xx naming it, recorded, no run.
	big := `{"ref":"` + strings.Repeat("x", 1<<20) + `"}`
	for _, c := range []struct {
		name, body string
		header     []string
		status     int
		says       string
	}{
		{"no token", payload, nil, http.StatusUnauthorized, "token is missing or wrong"},
		{"wrong token", payload, []string{"Authorization", "Bearer blgt_wrong"}, http.StatusUnauthorized, "token is missing or wrong"},
		{"bad JSON", `{"ref":`, []string{"Authorization", auth}, http.StatusBadRequest, "not valid JSON"},
		{"missing field", `{"ref":"x"}`, []string{"Authorization", auth}, http.StatusBadRequest, `param "bizdate": the request JSON has no value at "head_commit.date"`},
		{"null field", `{"ref":null,"head_commit":{"date":"1"}}`, []string{"Authorization", auth}, http.StatusBadRequest, `no value at "ref"`},
		{"bad time expression", `{"ref":"$[yyyyQQ]","head_commit":{"date":"1"}}`, []string{"Authorization", auth}, http.StatusBadRequest, `param "ref"`},
		{"oversize", big, []string{"Authorization", auth}, http.StatusRequestEntityTooLarge, "larger than the limit"},
		{"long key", payload, []string{"Authorization", auth, "Idempotency-Key", strings.Repeat("k", 300)}, http.StatusBadRequest, "Idempotency-Key is 300 bytes"},
	} {
		code := map[int]string{http.StatusUnauthorized: CodeUnauthorized, http.StatusBadRequest: CodeBadRequest,
			http.StatusRequestEntityTooLarge: CodePayloadTooLarge}[c.status]
		e := b.hook(nt.HookPath, c.body, c.header...).wantError(t, c.status, code)
		if !strings.Contains(e.Message, c.says) {
			t.Fatalf("%s: message %q, want it to say %q", c.name, e.Message, c.says)
		}
		if ds := b.deliveries(path); ds[0].Outcome != model.DeliveryRefused || ds[0].Reason != e.Message || ds[0].RunID != 0 {
			t.Fatalf("%s: recorded %+v, want refused with %q", c.name, ds[0], e.Message)
		}
	}
	// A refused key is not spent: its corrected retry runs.
	b.hook(nt.HookPath, `{"ref":"x"}`, "Authorization", auth, "Idempotency-Key", "d-2").want(t, http.StatusBadRequest)
	b.hook(nt.HookPath, payload, "Authorization", auth, "Idempotency-Key", "d-2").want(t, http.StatusCreated)

	// Disabled: refused; enabled again: accepted.
	b.send("PATCH", path, `{"enabled":false}`).want(t, http.StatusOK)
	e := b.hook(nt.HookPath, payload, "Authorization", auth).wantError(t, http.StatusForbidden, CodeForbidden)
	if !strings.Contains(e.Message, "disabled") {
		t.Fatalf("disabled: %q", e.Message)
	}
	b.send("PATCH", path, `{"enabled":true,"params":{"ref":"ref"}}`).want(t, http.StatusOK)
	b.hook(nt.HookPath, `{"ref":"v2"}`, "Authorization", auth).want(t, http.StatusCreated)

	// Rotation: the old token is refused, the new one works.
	var rot NewTrigger
	b.send("POST", path+"/rotate", "").want(t, http.StatusOK).json(t, &rot)
	if rot.Token == nt.Token || rot.RotatedAt == nil {
		t.Fatalf("rotated %+v", rot)
	}
	b.hook(nt.HookPath, payload, "Authorization", auth).want(t, http.StatusUnauthorized)
	b.hook(nt.HookPath, payload, "Authorization", "Bearer "+rot.Token).want(t, http.StatusCreated)

	// Unknown triggers: 404, nothing recorded anywhere.
	before := len(b.deliveries(path))
	b.hook("/api/v1/hooks/999999", payload, "Authorization", auth).wantError(t, http.StatusNotFound, CodeNotFound)
	b.hook("/api/v1/hooks/gh", payload, "Authorization", auth).wantError(t, http.StatusNotFound, CodeNotFound)
	ds := b.deliveries(path)
	if len(ds) != before {
		t.Fatalf("an unknown trigger's delivery was recorded: %d deliveries, want %d", len(ds), before)
	}
	var accepted, dup, refused int
	for _, d := range ds {
		switch d.Outcome {
		case model.DeliveryAccepted:
			accepted++
		case model.DeliveryDuplicate:
			dup++
		case model.DeliveryRefused:
			refused++
		}
	}
	var list InstanceList
	b.get("/api/v1/instances").want(t, http.StatusOK).json(t, &list)
	if accepted != 4 || dup != 1 || refused != 11 || list.Total != int64(accepted) {
		t.Fatalf("%d accepted, %d duplicate, %d refused, %d runs; want 4, 1, 11 and 4", accepted, dup, refused, list.Total)
	}
	var l List[TriggerDelivery]
	b.get(path+"/deliveries?limit=2").want(t, http.StatusOK).json(t, &l)
	if len(l.Items) != 2 || l.NextCursor != itoa(l.Items[1].ID) {
		t.Fatalf("a page of 2: %+v", l)
	}
	b.get(path+"/deliveries?limit=0").wantError(t, http.StatusBadRequest, CodeBadRequest)

	b.send("DELETE", path, "").want(t, http.StatusNoContent)
	b.hook(nt.HookPath, payload, "Authorization", "Bearer "+rot.Token).wantError(t, http.StatusNotFound, CodeNotFound)
	b.get(path).wantError(t, http.StatusNotFound, CodeNotFound)
}

// TestTriggerAccess: outsiders get 401, a user without a grant 404, a
// viewer reads triggers and deliveries but changes nothing (403), an
// editor manages them; a trigger's token is no user's token.
func TestTriggerAccess(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.mustWorkflow("p")
	base := "/api/v1/projects/p/workflows/nightly_etl/triggers"
	var nt NewTrigger
	b.send("POST", base, `{"name":"gh"}`).want(t, http.StatusCreated).json(t, &nt)
	writes := [][3]string{{"POST", base, `{"name":"x"}`}, {"PATCH", base + "/gh", `{"enabled":false}`},
		{"POST", base + "/gh/rotate", ""}, {"DELETE", base + "/gh", ""}}
	reads := []string{base, base + "/gh", base + "/gh/deliveries"}
	for _, w := range writes {
		b.as("", w[0], w[1], w[2]).wantError(t, http.StatusUnauthorized, CodeUnauthorized)
		b.as(nt.Token, w[0], w[1], w[2]).wantError(t, http.StatusUnauthorized, CodeUnauthorized)
	}
	for _, p := range reads {
		b.as("", "GET", p, "").wantError(t, http.StatusUnauthorized, CodeUnauthorized)
		b.as(nt.Token, "GET", p, "").wantError(t, http.StatusUnauthorized, CodeUnauthorized)
	}
	ann := b.tokenOf("ann", model.RoleUser)
	for _, p := range reads {
		b.as(ann, "GET", p, "").wantError(t, http.StatusNotFound, CodeNotFound)
	}
	for _, w := range writes {
		b.as(ann, w[0], w[1], w[2]).wantError(t, http.StatusNotFound, CodeNotFound)
	}
	b.send("PUT", "/api/v1/projects/p/grants/ann", `{"level":"operate"}`).want(t, http.StatusOK)
	for _, p := range reads {
		b.as(ann, "GET", p, "").want(t, http.StatusOK)
	}
	for _, w := range writes {
		b.as(ann, w[0], w[1], w[2]).wantError(t, http.StatusForbidden, CodeForbidden)
	}
	b.send("PUT", "/api/v1/projects/p/grants/ann", `{"level":"edit"}`).want(t, http.StatusOK)
	for i, status := range []int{http.StatusCreated, http.StatusOK, http.StatusOK, http.StatusNoContent} {
		b.as(ann, writes[i][0], writes[i][1], writes[i][2]).want(t, status)
	}
}
