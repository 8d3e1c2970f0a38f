package executor

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestTaskEnvIsAllowList: a task sees PATH, HOME, LANG, TZ and USER of the
// worker's environment, the names passed through, its BELUGA_* variables and
// its params; nothing else of the worker's environment (a database URL, a
// cloud key).
func TestTaskEnvIsAllowList(t *testing.T) {
	t.Setenv("BELUGA_DB", "mysql://root:hunter2@db/beluga")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI")
	t.Setenv("TEAM_TOKEN", "passed-through")
	t.Setenv("TZ", "UTC")
	b := setup(t, Config{EnvPassthrough: []string{"TEAM_TOKEN"}})
	d := dispatch(1, "env")
	d.Env = map[string]string{"GREETING": "hi", "TZ": "Europe/Paris"}
	b.mustDispatch(t, d)
	if res := b.waitResult(t, 1); res.State != "succeeded" {
		t.Fatalf("result %+v", res)
	}
	out, err := os.ReadFile(filepath.Join(b.dir, "logs", "7", "1.log"))
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Split(strings.TrimSpace(string(out)), "\n")
	for _, leak := range []string{"hunter2", "wJalrXUtnFEMI", "BELUGA_DB"} {
		if strings.Contains(string(out), leak) {
			t.Errorf("the task's environment shows %q:\n%s", leak, out)
		}
	}
	for _, want := range []string{"TEAM_TOKEN=passed-through", "GREETING=hi", "TZ=Europe/Paris", "BELUGA_OUTPUT=" + filepath.Join(b.dir, "work", "7", "1", ".beluga_output"),
		"PATH=" + os.Getenv("PATH")} {
		if !slices.Contains(env, want) {
			t.Errorf("the task's environment lacks %s:\n%s", want, out)
		}
	}
}

func TestAllowedEnv(t *testing.T) {
	t.Parallel()
	got := allowedEnv([]string{"PATH=/bin", "HOME=/root", "LANG=C.UTF-8", "TZ=UTC", "USER=me", "BELUGA_DB=x",
		"AWS_SECRET_ACCESS_KEY=k", "PATHX=1", "X=1", "=odd", "noequals"}, []string{"X", ""})
	want := []string{"PATH=/bin", "HOME=/root", "LANG=C.UTF-8", "TZ=UTC", "USER=me", "X=1"}
	if !slices.Equal(got, want) {
		t.Fatalf("allowedEnv = %q, want %q", got, want)
	}
}
