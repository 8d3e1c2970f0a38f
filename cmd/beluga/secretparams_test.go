package main

import (
	"github.com/beluga-scheduler/beluga/testkit/authtest"

	"context"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/common/clusterkey"
	"github.com/beluga-scheduler/beluga/common/secret"
	"github.com/beluga-scheduler/beluga/common/store"
)

// TestSecretParamsInCLI: what the CLI prints of a workflow and a run with
// secret params shows *** where the values are.
func TestSecretParamsInCLI(t *testing.T) {
	t.Parallel()
	const wfSecret, runSecret = "cli-Wf-secret-1", "cli-Run-secret-2"
	ctx := context.Background()
	dir := t.TempDir()
	st, err := store.Open(ctx, "sqlite://"+filepath.Join(dir, "beluga.db"), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	sec, _ := clusterkey.New([]byte("cli-test-cluster-secret"))
	box, _ := secret.NewBox(sec)
	srv := httptest.NewServer(authtest.Wrap(api.NewHandler(api.Deps{Store: st.WithSecrets(box)}), authtest.Admin(t, st)))
	t.Cleanup(srv.Close)
	e := &env{t: t, url: srv.URL, store: st, dir: dir}

	e.want(0, []string{"project", "create", "p"})
	spec := e.file("sec.yaml", "name: sec\nparams: {db_password: \""+wfSecret+"\"}\nsecret_params: [db_password]\n"+
		"tasks:\n  - {name: a, command: echo}\n")
	p := []string{"--project", "p"}
	e.want(0, append([]string{"workflow", "apply", "-f", spec}, p...), "created version 1")
	outputs := []string{
		e.want(0, append([]string{"workflow", "get", "sec"}, p...), "db_password: '***'"),
		e.want(0, append([]string{"-o", "json", "workflow", "get", "sec"}, p...), `"***"`),
	}
	out := e.want(0, append([]string{"workflow", "run", "sec", "--param", "api_key=" + runSecret, "--secret", "api_key"}, p...), "submitted")
	id := regexp.MustCompile(`instance (\d+)`).FindStringSubmatch(out)[1]
	outputs = append(outputs,
		e.want(0, []string{"instance", "show", id}, "api_key=***"),
		e.want(0, []string{"-o", "json", "instance", "show", id}, `"api_key": "***"`))
	e.want(2, append([]string{"workflow", "run", "sec", "--param", "a=1", "--secret", "b"}, p...), `secret_params names "b"`)
	for _, o := range outputs {
		if strings.Contains(o, wfSecret) || strings.Contains(o, runSecret) || strings.Contains(o, secret.Prefix) {
			t.Fatalf("CLI output shows a secret:\n%s", o)
		}
	}
}
