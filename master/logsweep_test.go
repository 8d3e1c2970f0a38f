package master_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/clusterkey"
	"github.com/beluga-scheduler/beluga/master"
	"github.com/beluga-scheduler/beluga/remote"
	"github.com/beluga-scheduler/beluga/remote/message"
)

// askGone sends a LogGone to the cell's master as role (with the cluster
// secret) and returns its reply or its Error's code.
func askGone(t *testing.T, c *cell, role string, ids []int64) ([]int64, string) {
	t.Helper()
	opts := remote.Options{}
	if !c.secret.Empty() {
		opts.Auth = &remote.Auth{Key: c.secret.Key(clusterkey.PurposeHandshake), Role: role, ID: func() string { return "127.0.0.1:1" }}
	}
	cl := remote.NewClient(nil, opts)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := cl.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer cl.Stop()
	r, err := cl.Request(ctx, c.m.Addr(), message.LogGone{InstanceIDs: ids})
	var re *remote.RemoteError
	if errors.As(err, &re) {
		return nil, re.Code
	}
	if err != nil {
		t.Fatalf("LogGone: %v", err)
	}
	g, ok := r.(message.LogGoneReply)
	if !ok {
		t.Fatalf("LogGone answered %T", r)
	}
	return g.Gone, ""
}

// TestLogGoneAnswersFromTheDatabase: a worker asking which runs are gone
// learns the ids with no row and nothing else; a malformed question (too
// many ids, an id not positive) is refused as bad_request and a peer that
// is not a worker as forbidden.
func TestLogGoneAnswersFromTheDatabase(t *testing.T) {
	s, _ := clusterkey.New([]byte("logsweep-test-cluster-secret0"))
	c := newCell(t, master.Config{Secret: s})
	c.apply("name: one\ntasks:\n  - {name: a, command: \"true\"}\n")
	c.addWorker(2)
	run := c.run("one", 2)
	c.finished(run.ID)

	gone, code := askGone(t, c, remote.RoleWorker, []int64{run.ID, run.ID + 500, run.ID + 501})
	if code != "" || !slices.Equal(gone, []int64{run.ID + 500, run.ID + 501}) {
		t.Fatalf("gone %v (%s), want [%d %d]", gone, code, run.ID+500, run.ID+501)
	}
	many := make([]int64, message.MaxLogRuns+1)
	for i := range many {
		many[i] = int64(i + 1)
	}
	for _, bad := range [][]int64{{run.ID, -3}, {0}, many} {
		if _, code := askGone(t, c, remote.RoleWorker, bad); code != "bad_request" {
			t.Errorf("LogGone of %d ids (first %d): code %q, want bad_request", len(bad), bad[0], code)
		}
	}
	for _, role := range []string{remote.RoleAPI, remote.RoleMaster} {
		if _, code := askGone(t, c, role, []int64{run.ID + 500}); code != "forbidden" {
			t.Errorf("LogGone from a %s: code %q, want forbidden", role, code)
		}
	}
}
