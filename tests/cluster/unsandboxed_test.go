package cluster

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"os/user"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/api/client"
	"github.com/beluga-scheduler/beluga/testkit/clustertest"
)

// TestUnisolatedWorkerRefusesUsersCode (docs/security.md, item 1): in a
// cluster whose only worker is not root (its tasks would run as its own
// OS user, with no sandbox), a plain user's shell task fails with the
// reason naming tasks.allow_unsandboxed_code, never dispatched; once an
// admin allows it, the same run's task runs there, as the worker's user.
// Before, the worker's isolation was known to no master: the task ran.
func TestUnisolatedWorkerRefusesUsersCode(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root: the test runs its worker as another OS user")
	}
	nobody, err := user.Lookup("nobody")
	if err != nil {
		t.Skip("no user nobody on this host")
	}
	c := clustertest.New(t, clustertest.Options{Masters: 1, Workers: 1, SessionTimeout: sessionTimeout,
		Users: map[string]string{"worker-1": "nobody"},
		Env:   map[string][]string{"worker-1": {"BELUGA_WORKER_TASK_ISOLATION=on"}}})
	ctx, cancel := context.WithTimeout(context.Background(), 2*finishWithin)
	defer cancel()
	if _, err := c.Client.CreateUser(ctx, "bob", "bob-password", "user"); err != nil {
		t.Fatal(err)
	}
	if err := c.Client.Grant(ctx, "demo", "bob", "edit"); err != nil {
		t.Fatal(err)
	}
	lr, err := c.Client.Login(ctx, "bob", "bob-password")
	if err != nil {
		t.Fatal(err)
	}
	bob := c.Client.WithToken(lr.Token)
	if _, err := bob.ApplyWorkflow(ctx, "demo", []byte("name: code\ntasks:\n  - name: sh\n    command: id -u\n")); err != nil {
		t.Fatal(err)
	}
	run := func() (string, string, int64) {
		t.Helper()
		inst, err := bob.Run(ctx, "demo", "code", client.RunOptions{})
		if err != nil {
			t.Fatal(err)
		}
		iv := c.WaitFinished(t, inst.ID, finishWithin)
		sh := c.Tasks(t, iv.ID)["sh"]
		if len(sh) == 0 {
			t.Fatalf("instance %d has no task sh: %+v", iv.ID, iv)
		}
		last := sh[len(sh)-1]
		return string(last.State), last.Message + "\n" + iv.Reason, last.ID
	}
	state, msg, id := run()
	if state != "failed" || !strings.Contains(msg, "tasks.allow_unsandboxed_code") || !strings.Contains(msg, `no worker of group "default"`) {
		t.Fatalf("bob's shell task on a worker that is not root: %s %q", state, msg)
	}
	if ti, err := c.Store.TaskGet(ctx, id); err == nil && ti.Host != "" {
		t.Fatalf("the refused task was dispatched to %s", ti.Host)
	}

	req, _ := http.NewRequestWithContext(ctx, "PUT", "http://"+c.API.Addr+"/api/v1/settings/tasks.allow_unsandboxed_code", strings.NewReader(`{"value":1}`))
	req.Header.Set("Authorization", "Bearer "+c.Client.Token())
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("allow unsandboxed code: %s", resp.Status)
	}
	state, msg, id = run()
	if state != "succeeded" {
		t.Fatalf("bob's shell task once allowed: %s %q", state, msg)
	}
	lctx, lcancel := context.WithTimeout(ctx, 10*time.Second)
	defer lcancel()
	var out bytes.Buffer
	if _, err := c.Client.TaskLog(lctx, id, 0, &out); err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out.String()); got != nobody.Uid {
		t.Fatalf("the allowed task ran as uid %q, want the worker's (nobody, %s)", got, nobody.Uid)
	}
}
