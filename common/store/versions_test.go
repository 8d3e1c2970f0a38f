package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
)

const diamondV2 = diamond + `  - {name: e, command: "true", depends_on: [d]}
`

// TestScheduleRunsItsPinnedVersion: a pin names a version the workflow
// has (else ErrUnknownVersion, nothing written); fires of a pinned
// schedule, one by one or in a batch, run that version; unpinned, the
// latest.
func TestScheduleRunsItsPinnedVersion(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		s.ProjectCreate(ctx, "demo", "")
		v1, _, err := s.WorkflowPut(ctx, "demo", mustSpec(t, diamond))
		if err != nil {
			t.Fatal(err)
		}
		v2, _, err := s.WorkflowPut(ctx, "demo", mustSpec(t, diamondV2))
		if err != nil || v2.Version != 2 {
			t.Fatalf("v2 %+v %v", v2, err)
		}
		t0 := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
		put := func(pin int) (model.Schedule, error) {
			sc, _, err := s.SchedulePut(ctx, model.Schedule{Project: "demo", Workflow: "diamond", Cron: "@hourly", Enabled: true,
				NextFireTime: &t0, PinVersion: pin}, nil)
			return sc, err
		}
		if _, err := put(3); !errors.Is(err, store.ErrUnknownVersion) || !strings.Contains(err.Error(), "1 to 2") {
			t.Fatalf("pin to a version the workflow lacks: %v", err)
		}
		if _, err := s.ScheduleGet(ctx, "demo", "diamond"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a refused pin wrote a schedule: %v", err)
		}
		sc, err := put(1)
		if err != nil || sc.PinVersion != 1 {
			t.Fatalf("pin 1: %+v %v", sc, err)
		}
		if got, _ := s.ScheduleGet(ctx, "demo", "diamond"); got.PinVersion != 1 {
			t.Fatalf("read back pin %d", got.PinVersion)
		}
		if err := s.TermBegin(ctx, 2, "m1"); err != nil {
			t.Fatal(err)
		}
		term := s.Term(2)
		at := func(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }
		next := at(1)
		runs, err := term.ScheduleFireOne(ctx, sc, store.Firing{Times: []time.Time{at(0)}, Next: &next})
		if err != nil || len(runs) != 1 || runs[0].Version != 1 || runs[0].DefinitionID != v1.ID {
			t.Fatalf("one fire of the pinned schedule: %+v %v", runs, err)
		}
		sc, _ = s.ScheduleGet(ctx, "demo", "diamond")
		next = at(2)
		res, err := term.ScheduleFireBatch(ctx, []store.ScheduleFire{{Schedule: sc, Firing: store.Firing{Times: []time.Time{at(1)}, Next: &next}}})
		if err != nil || len(res) != 1 || res[0].Err != nil || len(res[0].Runs) != 1 || res[0].Runs[0].Version != 1 || res[0].Runs[0].DefinitionID != v1.ID {
			t.Fatalf("a batch fire of the pinned schedule: %+v %v", res, err)
		}
		if sc, err = put(0); err != nil {
			t.Fatal(err)
		}
		next = at(3)
		res, err = term.ScheduleFireBatch(ctx, []store.ScheduleFire{{Schedule: sc, Firing: store.Firing{Times: []time.Time{at(2)}, Next: &next}}})
		if err != nil || len(res) != 1 || len(res[0].Runs) != 1 || res[0].Runs[0].Version != 2 {
			t.Fatalf("a fire unpinned: %+v %v", res, err)
		}
	})
}

// TestRestartChoosesItsVersion: rerun and recover_failed run the
// instance's own version unless the request names another ("latest" or a
// number, resolved when asked); the reopen moves the instance to it.
func TestRestartChoosesItsVersion(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		s.ProjectCreate(ctx, "demo", "")
		s.WorkflowPut(ctx, "demo", mustSpec(t, diamond))
		inst, err := s.InstanceCreateRun(ctx, store.RunRequest{Project: "demo", Workflow: "diamond"})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.InstanceFinish(ctx, inst.ID, model.WorkflowFailed, time.Now(), ""); err != nil {
			t.Fatal(err)
		}
		v2, _, err := s.WorkflowPut(ctx, "demo", mustSpec(t, diamondV2))
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			action  model.ActionKind
			version int
		}{{model.ActionRerun, 3}, {model.ActionRecoverFailed, 9}} {
			if _, err := s.ActionRequest(ctx, model.ActionRequest{InstanceID: inst.ID, Action: c.action, By: "op", Version: c.version}); !errors.Is(err, store.ErrUnknownVersion) {
				t.Fatalf("%s of version %d: %v", c.action, c.version, err)
			}
		}
		if _, err := s.ActionRequest(ctx, model.ActionRequest{InstanceID: inst.ID, Action: model.ActionResume, By: "op", Version: model.VersionLatest}); err == nil {
			t.Fatal("resume took a version")
		}
		if got := drainActions(t, s); len(got) != 0 {
			t.Fatalf("refused requests queued %+v", got)
		}
		// Its own version by number is no switch.
		if _, err := s.ActionRequest(ctx, model.ActionRequest{InstanceID: inst.ID, Action: model.ActionRerun, By: "op", Version: 1}); err != nil {
			t.Fatal(err)
		}
		if got := drainActions(t, s); len(got) != 1 || got[0].Version != 0 {
			t.Fatalf("rerun of its own version: %+v", got)
		}
		if _, err := s.ActionRequest(ctx, model.ActionRequest{InstanceID: inst.ID, Action: model.ActionRecoverFailed, By: "op", Version: model.VersionLatest}); err != nil {
			t.Fatal(err)
		}
		got := drainActions(t, s)
		if len(got) != 1 || got[0].Version != 2 {
			t.Fatalf("recover_failed of the latest: %+v", got)
		}
		hist, _ := s.InstanceHistory(ctx, inst.ID)
		if d := hist[len(hist)-1].Detail; !strings.Contains(d, "version 1 -> 2") {
			t.Fatalf("history says %q", d)
		}
		if err := s.TermBegin(ctx, 2, "m1"); err != nil {
			t.Fatal(err)
		}
		back, err := s.Term(2).InstanceReopen(ctx, inst.ID, []model.WorkflowState{model.WorkflowFailed}, false, "m1", got[0].Version)
		if err != nil || back.Version != 2 || back.DefinitionID != v2.ID || back.State != model.WorkflowRunning {
			t.Fatalf("reopen as version 2: %+v %v", back, err)
		}
		if commit, latest, err := s.VersionFacts(ctx, inst.DefinitionID, inst.ProjectID, "diamond"); err != nil || latest != 2 || commit != "" {
			t.Fatalf("latest %d, commit %q: %v", latest, commit, err)
		}
		if _, latest, err := s.VersionFacts(ctx, 0, inst.ProjectID, "no-such"); err != nil || latest != 0 {
			t.Fatalf("a workflow that is gone: latest %d %v", latest, err)
		}
	})
}

// TestGitVersionsRecordTheirCommit: a version a sync made records the
// commit; a commit (or a prefix of it) finds the version it made, and one
// that made none is ErrUnknownVersion naming the commits that did.
func TestGitVersionsRecordTheirCommit(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		s.ProjectCreate(ctx, "demo", "")
		if _, _, err := s.GitBindingPut(ctx, model.GitBinding{Project: "demo", URL: "/repo", BoundBy: "admin"}); err != nil {
			t.Fatal(err)
		}
		a, b, c := strings.Repeat("a1", 20), strings.Repeat("b2", 20), strings.Repeat("c3", 20)
		for _, step := range []struct{ commit, spec string }{{a, diamond}, {b, diamondV2}, {c, diamondV2}} {
			if _, err := s.GitSyncApply(ctx, "demo", "admin", step.commit, []string{"workflows/diamond.yaml"},
				[]*spec.Workflow{mustSpec(t, step.spec)}); err != nil {
				t.Fatal(err)
			}
		}
		v1, _ := s.WorkflowGet(ctx, "demo", "diamond", 1)
		v2, _ := s.WorkflowGet(ctx, "demo", "diamond", 2)
		if v1.GitCommit != a || v2.GitCommit != b {
			t.Fatalf("commits %q %q", v1.GitCommit, v2.GitCommit)
		}
		if got, latest, err := s.VersionFacts(ctx, v1.ID, v1.ProjectID, "diamond"); err != nil || got != a || latest != 2 {
			t.Fatalf("definition commit %q, latest %d: %v", got, latest, err)
		}
		if got, err := s.WorkflowVersionOfCommit(ctx, "demo", "diamond", strings.ToUpper(a[:9])); err != nil || got.Version != 1 {
			t.Fatalf("version of commit %s: %+v %v", a[:9], got, err)
		}
		for _, commit := range []string{c, "zz" + a[:8], a[:6]} {
			_, err := s.WorkflowVersionOfCommit(ctx, "demo", "diamond", commit)
			if !errors.Is(err, store.ErrUnknownVersion) {
				t.Fatalf("commit %s: %v", commit, err)
			}
			if commit == c && !strings.Contains(err.Error(), b[:12]) {
				t.Fatalf("commit %s: the error names no commit that made a version: %v", commit, err)
			}
		}
		// Applied by hand: no commit.
		v3, _, err := s.WorkflowPut(ctx, "demo", mustSpec(t, diamond))
		if err != nil || v3.Version != 3 || v3.GitCommit != "" {
			t.Fatalf("by hand %+v %v", v3, err)
		}
	})
}
