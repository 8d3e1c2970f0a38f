package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/api"
)

// TestTriggerCommands: beluga trigger create, list, disable, enable,
// rotate, deliveries and delete against a real server, with deliveries
// posted to the hook the create printed.
func TestTriggerCommands(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.want(0, []string{"project", "create", "p"})
	e.want(0, []string{"workflow", "apply", "-p", "p", "-f", e.file("etl.yaml", "name: etl\ntasks:\n  - {name: a, command: echo a}\n")})
	e.want(2, []string{"trigger", "list", "-p", "p"}, "--workflow is required")
	e.want(2, []string{"trigger", "create", "gh", "-p", "p", "-w", "etl", "--map", "ref"}, `--map "ref": use PARAM=PATH`)
	e.want(2, []string{"trigger", "create", "gh", "-p", "p", "-w", "etl", "--map", "PATH=ref"}, "reserved")
	var nt api.NewTrigger
	if err := json.Unmarshal([]byte(e.want(0, []string{"trigger", "create", "gh", "-p", "p", "-w", "etl", "--map", "ref=ref", "-o", "json"})), &nt); err != nil || nt.Token == "" {
		t.Fatalf("create: %+v %v", nt, err)
	}
	e.want(0, []string{"trigger", "list", "-p", "p", "-w", "etl"}, "gh", nt.HookPath, "ref=ref")
	if out := e.want(0, []string{"trigger", "list", "-p", "p", "-w", "etl"}); strings.Contains(out, nt.Token) {
		t.Fatalf("list prints the token: %s", out)
	}
	post := func(token, key, body string) int {
		t.Helper()
		req, err := http.NewRequest("POST", e.url+nt.HookPath, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Idempotency-Key", key)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	if s := post(nt.Token, "k1", `{"ref":"main"}`); s != http.StatusCreated {
		t.Fatalf("delivery: %d", s)
	}
	if s := post(nt.Token, "k1", `{"ref":"main"}`); s != http.StatusOK {
		t.Fatalf("its retry: %d", s)
	}
	e.want(0, []string{"trigger", "disable", "gh", "-p", "p", "-w", "etl"}, "trigger gh of etl disabled")
	if s := post(nt.Token, "k2", `{"ref":"main"}`); s != http.StatusForbidden {
		t.Fatalf("a delivery to a disabled trigger: %d", s)
	}
	e.want(0, []string{"trigger", "enable", "gh", "-p", "p", "-w", "etl"}, "enabled")
	out := e.want(0, []string{"trigger", "rotate", "gh", "-p", "p", "-w", "etl"}, "rotated", "Authorization: Bearer blgt_")
	_, tok, _ := strings.Cut(out, "Bearer ")
	tok, _, _ = strings.Cut(tok, "\n")
	if s := post(nt.Token, "k3", `{"ref":"main"}`); s != http.StatusUnauthorized {
		t.Fatalf("the old token after rotation: %d", s)
	}
	if s := post(tok, "k3", `{"ref":"main"}`); s != http.StatusCreated {
		t.Fatalf("the new token: %d", s)
	}
	e.want(0, []string{"trigger", "deliveries", "gh", "-p", "p", "-w", "etl"}, "accepted", "duplicate", "refused", "disabled", "token is missing or wrong")
	var ds []api.TriggerDelivery
	if err := json.Unmarshal([]byte(e.want(0, []string{"trigger", "deliveries", "gh", "-p", "p", "-w", "etl", "--limit", "2", "-o", "json"})), &ds); err != nil ||
		len(ds) != 2 || ds[0].Outcome != "accepted" || ds[1].Outcome != "refused" {
		t.Fatalf("deliveries: %+v %v", ds, err)
	}
	e.want(2, []string{"trigger", "deliveries", "gh", "-p", "p", "-w", "etl", "--limit", "0"}, "--limit must be 1 to 1000")
	e.want(0, []string{"trigger", "delete", "gh", "-p", "p", "-w", "etl"}, "deleted")
	e.want(1, []string{"trigger", "rotate", "gh", "-p", "p", "-w", "etl"}, `trigger "gh"`)
}
