package master_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/master"
	"github.com/beluga-scheduler/beluga/testkit/authtest"
	"github.com/beluga-scheduler/beluga/testkit/gittest"
	"github.com/beluga-scheduler/beluga/testkit/wait"
)

// TestLeaderSyncsGitPeriodically: the leader syncs a binding with a
// sync_interval by itself (real bare repositories, the API's sync as the
// user who bound), and a refused commit alerts the binding's channel once
// however often it is refused, naming the file; the binding's state shows
// the last result. A binding without an interval is left alone.
func TestLeaderSyncsGitPeriodically(t *testing.T) {
	t.Parallel()
	var syncer atomic.Pointer[api.GitSyncer]
	syncNow := func(ctx context.Context, project string) error {
		if s := syncer.Load(); s != nil {
			return s.Sync(ctx, project)
		}
		return errors.New("the test has not set the syncer yet")
	}
	c := newCell(t, master.Config{GitSync: syncNow, GitSyncTick: 100 * time.Millisecond})
	ctx := c.ctx
	syncer.Store(api.NewGitSyncer(api.Deps{Store: c.st}))
	authtest.User(t, c.st, "ann", model.RoleAdmin)

	got := master.AlertReceiver(t, c.st, "ops")

	good := gittest.New(t)
	c1 := good.Commit("main", "first", map[string]string{"workflows/etl.yaml": "tasks:\n  - name: a\n    command: echo a\n"})
	bad := gittest.New(t)
	c2 := bad.Commit("main", "bad", map[string]string{"workflows/ok.yaml": "tasks:\n  - name: a\n    command: echo a\n",
		"workflows/broken.yaml": "tasks:\n  - name: a\n    command: echo a\n    depends_on: [nowhere]\n"})
	for _, p := range []string{"q", "r"} {
		if _, err := c.st.ProjectCreate(ctx, p, ""); err != nil {
			t.Fatal(err)
		}
	}
	bind := func(project, url string, every time.Duration) {
		t.Helper()
		if _, _, err := c.st.GitBindingPut(ctx, model.GitBinding{Project: project, URL: url, Branch: "main", BoundBy: "ann",
			SyncInterval: every, AlertChannels: []string{"ops"}}); err != nil {
			t.Fatal(err)
		}
	}
	bind("p", good.Bare, time.Minute)
	bind("q", bad.Bare, time.Minute)
	bind("r", good.Bare, 0)

	wait.UntilErr(t, 30*time.Second, "the leader synced p", func() error {
		g, err := c.st.GitBindingGet(ctx, "p")
		if err != nil || g.LastCommit != c1 {
			return fmt.Errorf("binding %+v (%v)", g, err)
		}
		return nil
	})
	if _, err := c.st.WorkflowGet(ctx, "p", "etl", 0); err != nil {
		t.Fatalf("etl after the periodic sync: %v", err)
	}
	wait.Until(t, 30*time.Second, "q's refused commit alerted", func() bool { return len(got()) > 0 })
	g, err := c.st.GitBindingGet(ctx, "q")
	if err != nil || g.LastAttemptCommit != c2 || g.LastErrorFile != "workflows/broken.yaml" || !strings.Contains(g.LastError, "nowhere") {
		t.Fatalf("q's state %+v (%v)", g, err)
	}
	if _, err := c.st.WorkflowGet(ctx, "q", "ok", 0); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("q's good file of the refused commit was applied (%v)", err)
	}

	// The same commit refused again (a sync now): the alerter reads its
	// event, and no second alert is sent.
	if err := api.NewGitSyncer(api.Deps{Store: c.st}).Sync(ctx, "q"); err == nil {
		t.Fatal("the bad commit synced")
	}
	evs, err := c.st.EventList(ctx, 0, model.EventFilter{Kinds: []string{model.EventGitSync}, Project: "q"}, 100)
	if err != nil || len(evs) < 2 {
		t.Fatalf("q's git_sync events %+v (%v)", evs, err)
	}
	last := evs[len(evs)-1].Seq
	wait.UntilErr(t, 30*time.Second, "the alerter read past the second refusal", func() error {
		cur, err := c.st.AlertCursor(ctx)
		if err != nil || cur < last {
			return fmt.Errorf("alert cursor %d, want %d (%v)", cur, last, err)
		}
		return nil
	})
	hist, err := c.st.AlertList(ctx, store.AlertFilter{Channel: "ops"})
	if err != nil || len(hist) != 1 || hist[0].Kind != master.AlertGitRefused || hist[0].Project != "q" ||
		!strings.Contains(hist[0].Message, "workflows/broken.yaml") || !strings.Contains(hist[0].Message, c2) {
		t.Fatalf("alert history %+v (%v), want one alert of q's commit", hist, err)
	}
	if got := got(); len(got) != 1 || !strings.Contains(got[0].Text, "nowhere") {
		t.Errorf("received %+v", got)
	}
	if g, err := c.st.GitBindingGet(ctx, "r"); err != nil || g.LastSyncedAt != nil {
		t.Fatalf("r (no interval) was synced: %+v (%v)", g, err)
	}
}
