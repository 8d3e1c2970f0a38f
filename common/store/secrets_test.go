package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/clusterkey"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/secret"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
)

const (
	wfSecret  = "wf-Pa55word-plain"
	tskSecret = "task-T0ken-plain"
	runSecret = "run-S3cret-plain"
)

var secretSpec = `
name: sec
params: {db_password: "` + wfSecret + `", day: "$[yyyyMMdd]"}
secret_params: [db_password]
tasks:
  - name: a
    command: echo
    params: {token: "` + tskSecret + `"}
    secret_params: [token]
`

func testBox(t *testing.T) *secret.Box {
	t.Helper()
	sec, err := clusterkey.New([]byte("store-test-cluster-secret"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := secret.NewBox(sec)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// noPlain fails if any raw value of table.column holds one of the plain
// secrets.
func noPlain(t *testing.T, s *store.Store, table, column string) []string {
	t.Helper()
	vals, err := store.RawColumn(s, table, column)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vals {
		for _, p := range []string{wfSecret, tskSecret, runSecret} {
			if strings.Contains(v, p) {
				t.Fatalf("%s.%s holds the plaintext %q: %s", table, column, p, v)
			}
		}
	}
	return vals
}

func TestSecretParamsSealedAtRest(t *testing.T) {
	each(t, func(t *testing.T, plain *store.Store) {
		ctx := context.Background()
		box := testBox(t)
		s := plain.WithSecrets(box)
		if _, err := s.CreateProject(ctx, "demo", ""); err != nil {
			t.Fatal(err)
		}
		if _, _, err := plain.PutWorkflow(ctx, "demo", mustSpec(t, secretSpec)); !errors.Is(err, secret.ErrNoKey) {
			t.Fatalf("a store without a key stored a secret spec: %v", err)
		}
		def, created, err := s.PutWorkflow(ctx, "demo", mustSpec(t, secretSpec))
		if err != nil || !created {
			t.Fatalf("put: %v %v", created, err)
		}
		raw := noPlain(t, s, "workflow_definition", "spec_json")
		if !strings.Contains(raw[0], secret.Prefix) || !strings.Contains(raw[0], `"day":"$[yyyyMMdd]"`) {
			t.Fatalf("stored spec: want sealed secrets and plain params: %s", raw[0])
		}
		// The same spec again is no new version, though each seal differs.
		again, created, err := s.PutWorkflow(ctx, "demo", mustSpec(t, secretSpec))
		if err != nil || created || again.Version != 1 || again.SpecHash != def.SpecHash {
			t.Fatalf("re-put: %+v %v %v", again, created, err)
		}
		// A changed secret is a change.
		changed, created, err := s.PutWorkflow(ctx, "demo", mustSpec(t, strings.Replace(secretSpec, wfSecret, "other-"+wfSecret[:3], 1)))
		if err != nil || !created || changed.SpecHash == def.SpecHash {
			t.Fatalf("changed secret: %+v %v %v", changed, created, err)
		}
		// The hash is not the plain spec's: it would let anyone test guesses.
		if _, plainHash, _ := mustSpec(t, secretSpec).Canonical(); plainHash == def.SpecHash {
			t.Fatal("the spec hash is the hash of the plaintext spec")
		}
		got, err := s.GetWorkflow(ctx, "demo", "sec", 1)
		if err != nil {
			t.Fatal(err)
		}
		w, err := spec.ParseStored(got.SpecJSON)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := box.Open(w.Params["db_password"]); err != nil || v != wfSecret {
			t.Fatalf("stored workflow secret opens to %q, %v", v, err)
		}
		if v, err := box.Open(w.Tasks[0].Params["token"]); err != nil || v != tskSecret {
			t.Fatalf("stored task secret opens to %q, %v", v, err)
		}

		// A run: its own secret_params, and a param the spec marks secret.
		inst, err := s.CreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "sec", CommandType: model.CommandStart,
			Params:       map[string]string{"api_key": runSecret, "db_password": wfSecret, "plain": "p"},
			SecretParams: []string{"api_key"}})
		if err != nil {
			t.Fatal(err)
		}
		noPlain(t, s, "workflow_instance", "params_json")
		for k, want := range map[string]string{"api_key": runSecret, "db_password": wfSecret} {
			if v, err := box.Open(inst.Params[k]); err != nil || v != want {
				t.Fatalf("run param %s opens to %q, %v", k, v, err)
			}
		}
		if inst.Params["plain"] != "p" {
			t.Fatalf("plain run param: %q", inst.Params["plain"])
		}

		// A schedule; written back with the mask an answer shows, it keeps
		// its secret.
		t0 := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
		sc, _, err := s.PutSchedule(ctx, model.Schedule{Project: "demo", Workflow: "sec", Cron: "@daily", Enabled: true, NextFireTime: &t0,
			Params: map[string]string{"api_key": runSecret}, SecretParams: []string{"api_key"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		sealed := sc.Params["api_key"]
		sc.Params = map[string]string{"api_key": secret.Mask}
		if sc, _, err = s.PutSchedule(ctx, sc, nil); err != nil || sc.Params["api_key"] != sealed {
			t.Fatalf("schedule written back with the mask: %v %v", sc.Params, err)
		}
		noPlain(t, s, "schedule", "params_json")
		if err := s.BeginTerm(ctx, 2, "m"); err != nil {
			t.Fatal(err)
		}
		fired, err := s.Term(2).FireSchedule(ctx, sc, store.Firing{Times: []time.Time{t0}})
		if err != nil || len(fired) != 1 {
			t.Fatalf("fire: %v %v", fired, err)
		}
		if v, err := box.Open(fired[0].Params["api_key"]); err != nil || v != runSecret {
			t.Fatalf("fired run's secret opens to %q, %v", v, err)
		}

		// A backfill.
		_, err = s.CreateBackfill(ctx, model.Backfill{Project: "demo", Workflow: "sec", Cron: "@daily",
			Start: t0, End: t0, Times: []time.Time{t0}, Params: map[string]string{"api_key": runSecret, "db_password": wfSecret},
			SecretParams: []string{"api_key"}})
		if err != nil {
			t.Fatal(err)
		}
		noPlain(t, s, "backfill", "params_json")
		noPlain(t, s, "workflow_instance", "params_json")
	})
}
