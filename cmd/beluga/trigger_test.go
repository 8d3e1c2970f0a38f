package main

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
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

// TestTriggerReadmeExample runs the README's "Webhook triggers" example:
// its beluga trigger create through the CLI, its curl as written (the
// address and the hook id replaced by the test server's), twice: a run
// with the mapped params, then a duplicate naming the same run.
func TestTriggerReadmeExample(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(readme), "### Webhook triggers\n")
	_, block, ok2 := strings.Cut(section, "```sh\n")
	block, _, ok3 := strings.Cut(block, "```")
	if !ok || !ok2 || !ok3 {
		t.Fatal("README has no sh block under ### Webhook triggers")
	}
	var create, curl string
	for _, l := range strings.Split(strings.ReplaceAll(block, "\\\n", " "), "\n") {
		switch {
		case strings.HasPrefix(l, "beluga trigger create "):
			create = l
		case strings.HasPrefix(l, "curl "):
			curl = l
		}
	}
	if create == "" || curl == "" {
		t.Fatalf("the README example lacks its create or its curl:\n%s", block)
	}
	e := newEnv(t)
	e.want(0, []string{"project", "create", "demo"})
	e.want(0, []string{"workflow", "apply", "-p", "demo", "-f", "../../examples/nightly.yaml"})
	var nt api.NewTrigger
	if err := json.Unmarshal([]byte(e.want(0, append(strings.Fields(create)[1:], "-o", "json"))), &nt); err != nil {
		t.Fatal(err)
	}
	const written = "localhost:12345/api/v1/hooks/1"
	if !strings.Contains(curl, written) {
		t.Fatalf("the README's curl does not post to %s: %s", written, curl)
	}
	curl = strings.Replace(curl, written, e.url+nt.HookPath, 1) + " -s -w ' %{http_code}'"
	post := func() (api.TriggerDelivery, string) {
		t.Helper()
		cmd := exec.Command("bash", "-c", curl)
		cmd.Env = append(os.Environ(), "TRIGGER_TOKEN="+nt.Token)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%s: %v", curl, err)
		}
		i := strings.LastIndex(string(out), " ")
		body, status := string(out[:i]), string(out[i+1:])
		var d api.TriggerDelivery
		if err := json.Unmarshal([]byte(body), &d); err != nil {
			t.Fatalf("%s: %v: %s", curl, err, out)
		}
		return d, status
	}
	d1, s1 := post()
	d2, s2 := post()
	if s1 != "201" || d1.Outcome != "accepted" || s2 != "200" || d2.Outcome != "duplicate" || d2.RunID != d1.RunID {
		t.Fatalf("the README's curl twice: %s %+v, then %s %+v", s1, d1, s2, d2)
	}
	inst, err := e.store.InstanceGet(context.Background(), d1.RunID)
	if err != nil || inst.Params["bizdate"] != "20261201" || inst.Params["ref"] != "main" {
		t.Fatalf("the run %+v %v", inst.Params, err)
	}
}
