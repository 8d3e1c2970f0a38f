package master

import (
	"slices"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
)

func TestGitDue(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	at := func(d time.Duration) *time.Time { x := now.Add(-d); return &x }
	bs := []model.GitBinding{
		{Project: "never", SyncInterval: time.Minute},
		{Project: "off", SyncInterval: 0},
		{Project: "recent", SyncInterval: 5 * time.Minute, LastSyncedAt: at(4 * time.Minute)},
		{Project: "exactly", SyncInterval: 5 * time.Minute, LastSyncedAt: at(5 * time.Minute)},
		{Project: "late", SyncInterval: time.Minute, LastSyncedAt: at(time.Hour)},
	}
	if got, want := gitDue(bs, now), []string{"never", "exactly", "late"}; !slices.Equal(got, want) {
		t.Fatalf("due %v, want %v", got, want)
	}
}

func TestGitRefusedAlerts(t *testing.T) {
	t.Parallel()
	a := gitRefusedAlerts("p", "c1", "workflows/x.yaml", "bad", []string{"ops", "mail"})
	b := gitRefusedAlerts("p", "c1", "workflows/x.yaml", "still bad", []string{"ops"})
	c := gitRefusedAlerts("p", "c2", "workflows/x.yaml", "bad", []string{"ops"})
	if len(a) != 2 || a[0].Key == a[1].Key || a[0].Key != b[0].Key || a[0].Key == c[0].Key || a[0].Kind != AlertGitRefused {
		t.Fatalf("keys: one per commit and channel: %+v %+v %+v", a, b, c)
	}
	f := gitRefusedAlerts("p", "", "", "connection refused", []string{"ops"})
	if f[0].Message != "git sync of project p failed, nothing changed: connection refused" || f[0].Key == a[0].Key {
		t.Fatalf("a fetch failure: %+v", f)
	}
	if len(a[0].Key) > 255 {
		t.Fatal("key longer than the column")
	}
}
