package master_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/common/clusterkey"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/secret"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/master"
)

func mustBox(t *testing.T, s clusterkey.Secret) *secret.Box {
	t.Helper()
	b, err := secret.NewBox(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestSecretSealedUnderAnotherKeyFailsTask: a secret param sealed under
// another cluster secret (a database moved between clusters) cannot be
// opened by the master. Its task is never sent: each attempt fails with a
// reason naming the param, and the command does not run. The same spec
// sealed under the master's own secret runs, with the value opened.
func TestSecretSealedUnderAnotherKeyFailsTask(t *testing.T) {
	t.Parallel()
	ours, _ := clusterkey.New([]byte("master-test-cluster-secret"))
	theirs, _ := clusterkey.New([]byte("another-cluster-secret-000"))
	c := newCell(t, master.Config{Secret: ours})
	c.addWorker(2)
	ran := filepath.Join(c.dir, "ran")
	put := func(name string, box *secret.Box) {
		t.Helper()
		wf, err := spec.Parse([]byte(`name: ` + name + `
params: {db_password: "pw-Plain-1"}
secret_params: [db_password]
tasks:
  - {name: use, command: 'printf %s "$db_password" > ` + ran + `.` + name + `', retries: 1}
`))
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.st.WithSecrets(box).WorkflowPut(c.ctx, "p", wf); err != nil {
			t.Fatal(err)
		}
	}
	put("foreign", mustBox(t, theirs))
	put("own", mustBox(t, ours))

	bad := c.finished(c.run("foreign", model.PriorityMedium).ID)
	if bad.State != model.WorkflowFailed {
		t.Fatalf("foreign-sealed run: %s, want failed; tasks %+v", bad.State, c.tasks(bad.ID))
	}
	tasks := c.tasks(bad.ID)
	if len(tasks) != 2 || tasks[0].State != model.TaskFailed || tasks[1].State != model.TaskFailed {
		t.Fatalf("foreign-sealed run's tasks: %+v, want attempts 1 and 2 failed", tasks)
	}
	if !strings.Contains(bad.Reason, "db_password") || !strings.Contains(bad.Reason, "another") {
		t.Fatalf("reason %q does not name the param and why", bad.Reason)
	}
	if strings.Contains(bad.Reason, secret.Prefix) {
		t.Fatalf("reason shows the sealed value: %q", bad.Reason)
	}
	if _, err := os.Stat(ran + ".foreign"); err == nil {
		t.Fatal("the task ran with a secret that did not open")
	}

	good := c.finished(c.run("own", model.PriorityMedium).ID)
	if good.State != model.WorkflowSucceeded {
		t.Fatalf("own-sealed run: %s; tasks %+v", good.State, c.tasks(good.ID))
	}
	if got, err := os.ReadFile(ran + ".own"); err != nil || string(got) != "pw-Plain-1" {
		t.Fatalf("own-sealed task got %q, %v", got, err)
	}
}
