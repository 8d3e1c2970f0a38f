package main

import (
	"bytes"
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/common/store"
)

// TestLoginStoresTokenForEveryVerb: beluga login keeps a token (0600) in
// the config dir, every verb sends it, BELUGA_TOKEN overrides it, logout
// revokes it.
func TestLoginStoresTokenForEveryVerb(t *testing.T) {
	t.Parallel()
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
	if _, err := api.Bootstrap(ctx, st, "admin-password-1", dir, nil); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(api.NewHandler(api.Deps{Store: st}))
	t.Cleanup(srv.Close)
	conf := filepath.Join(dir, "conf")
	env := map[string]string{"BELUGA_CONFIG_DIR": conf}
	run := func(stdin string, args ...string) (int, string) {
		var out, errb bytes.Buffer
		code := executeEnv(ctx, append([]string{"--server", srv.URL}, args...), func(k string) string { return env[k] },
			strings.NewReader(stdin), &out, &errb)
		return code, out.String() + errb.String()
	}

	// Before login: refused with a message saying how to log in.
	if code, out := run("", "project", "list"); code != exitFailed || !strings.Contains(out, "beluga login") {
		t.Fatalf("anonymous: %d %s", code, out)
	}
	if code, out := run("wrong-password\n", "login", "-u", "admin"); code != exitFailed || !strings.Contains(out, "wrong username or password") {
		t.Fatalf("bad login: %d %s", code, out)
	}
	code, out := run("admin-password-1\n", "login", "-u", "admin")
	if code != 0 || !strings.Contains(out, "logged in to "+srv.URL+" as admin") {
		t.Fatalf("login: %d %s", code, out)
	}
	fi, err := os.Stat(filepath.Join(conf, "credentials.json"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("credentials file %v %v", fi, err)
	}
	if code, out := run("", "project", "create", "p"); code != 0 {
		t.Fatalf("create with the stored token: %d %s", code, out)
	}
	if code, out := run("", "whoami"); code != 0 || !strings.Contains(out, "admin (admin)") {
		t.Fatalf("whoami: %d %s", code, out)
	}
	if code, out := run("", "audit", "--user", "admin"); code != 0 || !strings.Contains(out, "POST /api/v1/projects") ||
		!strings.Contains(out, "POST /api/v1/login") {
		t.Fatalf("audit: %d %s", code, out)
	}
	// BELUGA_TOKEN wins over the stored token.
	env["BELUGA_TOKEN"] = "blg_not_a_token"
	if code, out := run("", "project", "list"); code != exitFailed || !strings.Contains(out, "invalid, expired or revoked") {
		t.Fatalf("BELUGA_TOKEN: %d %s", code, out)
	}
	delete(env, "BELUGA_TOKEN")
	// Logout revokes the token on the server, not just locally.
	b, _ := os.ReadFile(filepath.Join(conf, "credentials.json"))
	if code, out := run("", "logout"); code != 0 || !strings.Contains(out, "logged out") {
		t.Fatalf("logout: %d %s", code, out)
	}
	if n := strings.Index(string(b), `"token": "`); n >= 0 {
		tok := string(b)[n+len(`"token": "`):]
		env["BELUGA_TOKEN"] = tok[:strings.IndexByte(tok, '"')]
	}
	if code, out := run("", "project", "list"); code != exitFailed || !strings.Contains(out, "revoked") {
		t.Fatalf("after logout: %d %s", code, out)
	}
}
