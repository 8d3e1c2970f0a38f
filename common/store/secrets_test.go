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

// sealedStore is plain sealing with testBox, with a project "demo".
func sealedStore(t *testing.T, plain *store.Store) (context.Context, *secret.Box, *store.Store) {
	t.Helper()
	ctx := context.Background()
	box := testBox(t)
	s := plain.WithSecrets(box)
	if _, err := s.ProjectCreate(ctx, "demo", ""); err != nil {
		t.Fatal(err)
	}
	return ctx, box, s
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
		ctx, box, s := sealedStore(t, plain)
		if _, _, err := plain.WorkflowPut(ctx, "demo", mustSpec(t, secretSpec)); !errors.Is(err, secret.ErrNoKey) {
			t.Fatalf("a store without a key stored a secret spec: %v", err)
		}
		def, created, err := s.WorkflowPut(ctx, "demo", mustSpec(t, secretSpec))
		if err != nil || !created {
			t.Fatalf("put: %v %v", created, err)
		}
		raw := noPlain(t, s, "workflow_definition", "spec_json")
		if !strings.Contains(raw[0], secret.Prefix) || !strings.Contains(raw[0], `"day":"$[yyyyMMdd]"`) {
			t.Fatalf("stored spec: want sealed secrets and plain params: %s", raw[0])
		}
		// The same spec again is no new version, though each seal differs.
		again, created, err := s.WorkflowPut(ctx, "demo", mustSpec(t, secretSpec))
		if err != nil || created || again.Version != 1 || again.SpecHash != def.SpecHash {
			t.Fatalf("re-put: %+v %v %v", again, created, err)
		}
		// A changed secret is a change.
		changed, created, err := s.WorkflowPut(ctx, "demo", mustSpec(t, strings.Replace(secretSpec, wfSecret, "other-"+wfSecret[:3], 1)))
		if err != nil || !created || changed.SpecHash == def.SpecHash {
			t.Fatalf("changed secret: %+v %v %v", changed, created, err)
		}
		// The hash is not the plain spec's: it would let anyone test guesses.
		if _, plainHash, _ := mustSpec(t, secretSpec).Canonical(); plainHash == def.SpecHash {
			t.Fatal("the spec hash is the hash of the plaintext spec")
		}
		got, err := s.WorkflowGet(ctx, "demo", "sec", 1)
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
		inst, err := s.InstanceCreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "sec", CommandType: model.CommandStart,
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
		sc, _, err := s.SchedulePut(ctx, model.Schedule{Project: "demo", Workflow: "sec", Cron: "@daily", Enabled: true, NextFireTime: &t0,
			Params: map[string]string{"api_key": runSecret}, SecretParams: []string{"api_key"}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		sealed := sc.Params["api_key"]
		sc.Params = map[string]string{"api_key": secret.Mask}
		if sc, _, err = s.SchedulePut(ctx, sc, nil); err != nil || sc.Params["api_key"] != sealed {
			t.Fatalf("schedule written back with the mask: %v %v", sc.Params, err)
		}
		noPlain(t, s, "schedule", "params_json")
		if err := s.TermBegin(ctx, 2, "m"); err != nil {
			t.Fatal(err)
		}
		fired, err := s.Term(2).ScheduleFireOne(ctx, sc, store.Firing{Times: []time.Time{t0}})
		if err != nil || len(fired) != 1 {
			t.Fatalf("fire: %v %v", fired, err)
		}
		if v, err := box.Open(fired[0].Params["api_key"]); err != nil || v != runSecret {
			t.Fatalf("fired run's secret opens to %q, %v", v, err)
		}

		// A backfill.
		_, err = s.BackfillCreate(ctx, model.Backfill{Project: "demo", Workflow: "sec", Cron: "@daily",
			Start: t0, End: t0, Times: []time.Time{t0}, Params: map[string]string{"api_key": runSecret, "db_password": wfSecret},
			SecretParams: []string{"api_key"}})
		if err != nil {
			t.Fatal(err)
		}
		noPlain(t, s, "backfill", "params_json")
		noPlain(t, s, "workflow_instance", "params_json")
	})
}

// A spec read back shows its secrets as the mask; applied again as it was
// read, it keeps the sealed values of the latest version (and is no new
// version), while a mask where nothing was sealed is refused by name.
func TestSecretMaskAppliedBackKeepsSealedValue(t *testing.T) {
	each(t, func(t *testing.T, plain *store.Store) {
		ctx, box, s := sealedStore(t, plain)
		def, _, err := s.WorkflowPut(ctx, "demo", mustSpec(t, secretSpec))
		if err != nil {
			t.Fatal(err)
		}
		masked := strings.NewReplacer(wfSecret, secret.Mask, tskSecret, secret.Mask).Replace(secretSpec)
		again, created, err := s.WorkflowPut(ctx, "demo", mustSpec(t, masked))
		if err != nil || created || again.Version != 1 || again.SpecHash != def.SpecHash {
			t.Fatalf("masked spec applied back: created %v version %d hash %s (was %s): %v",
				created, again.Version, again.SpecHash, def.SpecHash, err)
		}
		// With another change it is a new version that keeps both secrets.
		edited := strings.Replace(masked, "command: echo", "command: echo edited", 1)
		v2, created, err := s.WorkflowPut(ctx, "demo", mustSpec(t, edited))
		if err != nil || !created || v2.Version != 2 {
			t.Fatalf("edited masked spec: created %v version %d: %v", created, v2.Version, err)
		}
		w, err := spec.ParseStored(v2.SpecJSON)
		if err != nil {
			t.Fatal(err)
		}
		if v, err := box.Open(w.Params["db_password"]); err != nil || v != wfSecret {
			t.Fatalf("version 2's workflow secret opens to %q, %v (stored %q)", v, err, w.Params["db_password"])
		}
		if v, err := box.Open(w.Tasks[0].Params["token"]); err != nil || v != tskSecret {
			t.Fatalf("version 2's task secret opens to %q, %v (stored %q)", v, err, w.Tasks[0].Params["token"])
		}
		// The same spec again (v2 masked) is still no new version.
		if v, created, err := s.WorkflowPut(ctx, "demo", mustSpec(t, edited)); err != nil || created || v.Version != 2 {
			t.Fatalf("edited masked spec again: created %v version %d: %v", created, v.Version, err)
		}

		// A mask for a secret that has no sealed value to keep: refused,
		// naming it, and nothing stored.
		fresh := strings.Replace(strings.Replace(masked, "token: \""+secret.Mask+"\"", "token: \"t\", key: \""+secret.Mask+"\"", 1),
			"secret_params: [token]", "secret_params: [token, key]", 1)
		_, _, err = s.WorkflowPut(ctx, "demo", mustSpec(t, fresh))
		if !errors.Is(err, store.ErrMaskedSecret) || !strings.Contains(err.Error(), `task "a"`) || !strings.Contains(err.Error(), "key") {
			t.Fatalf("a mask with no sealed value: want ErrMaskedSecret naming task a's key, got %v", err)
		}
		_, _, err = s.WorkflowPut(ctx, "demo", mustSpec(t, strings.Replace(masked, "name: sec", "name: other", 1)))
		if !errors.Is(err, store.ErrMaskedSecret) || !strings.Contains(err.Error(), "db_password") {
			t.Fatalf("a new workflow with masks: want ErrMaskedSecret naming db_password, got %v", err)
		}
		if latest, err := s.WorkflowGet(ctx, "demo", "sec", 0); err != nil || latest.Version != 2 {
			t.Fatalf("latest after refusals: %d %v", latest.Version, err)
		}
	})
}
