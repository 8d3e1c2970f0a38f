package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCLIDatasource(t *testing.T) {
	e := newEnv(t)
	db := filepath.Join(e.dir, "lite.db")
	if err := os.WriteFile(db, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	e.want(0, []string{"datasource", "set", "lite", "--type", "sqlite", "--database", db}, "datasource lite set (sqlite, password none)")
	e.want(2, []string{"datasource", "set", "bad", "--type", "oracle"}, `type: must be one of mysql, postgres, sqlite, got "oracle"`)
	e.want(2, []string{"datasource", "set", "bad", "--type", "mysql", "--user", "u"}, "host: is required")
	e.want(2, []string{"datasource", "set", "bad", "--type", "mysql", "--param", "novalue"}, `--param "novalue": want key=value`)
	e.want(2, []string{"datasource", "set", "bad", "--type", "mysql", "--password-stdin", "--no-password"}, "at most one of")
	e.want(2, []string{"datasource", "set", "bad", "--type", "sqlite", "--database", db, "--project", "p", "--no-projects"}, "not both")

	// Granted to projects (docs/security.md, section 4): --project replaces them, --no-projects withdraws all.
	e.want(0, []string{"project", "create", "granted"})
	e.want(0, []string{"datasource", "set", "lite", "--type", "sqlite", "--database", db, "--project", "granted"}, "datasource lite set")
	e.want(0, []string{"datasource", "show", "lite"}, "projects", "granted")
	e.want(0, []string{"datasource", "set", "lite", "--type", "sqlite", "--database", db, "--no-projects"}, "datasource lite set")
	if out := e.want(0, []string{"datasource", "show", "lite", "-o", "json"}, "lite"); !strings.Contains(out, `"projects": []`) && !strings.Contains(out, `"projects":[]`) {
		t.Fatalf("projects left after --no-projects:\n%s", out)
	}

	// The password comes from stdin, never a flag; show and list never print it.
	code, out, errOut := e.cliIn("Hidden-Pw-42\n", "datasource", "set", "wh", "--type", "postgres", "--host", "127.0.0.1",
		"--port", "1", "--user", "etl", "--password-stdin", "--param", "sslmode=disable")
	if code != 0 || !strings.Contains(out, "password set") {
		t.Fatalf("set with password: %d %s %s", code, out, errOut)
	}
	for _, args := range [][]string{{"datasource", "show", "wh"}, {"datasource", "list"}, {"datasource", "show", "wh", "-o", "json"}} {
		out := e.want(0, args, "wh")
		if strings.Contains(out, "Hidden-Pw-42") {
			t.Fatalf("beluga %v shows the password:\n%s", args, out)
		}
	}
	e.want(0, []string{"datasource", "show", "wh"}, "password", "set", "param sslmode", "127.0.0.1:1")

	e.want(0, []string{"datasource", "test", "lite"}, "datasource lite: ok")
	code, out, errOut = e.cli("datasource", "test", "wh")
	if code != 1 || !strings.Contains(errOut, "datasource wh:") || strings.Contains(out+errOut, "Hidden-Pw-42") {
		t.Fatalf("test of an unreachable datasource: %d %q %q", code, out, errOut)
	}

	// In use by a workflow's latest version: delete is refused until it is not.
	e.want(0, []string{"project", "create", "p"})
	uses := e.file("uses.yaml", "name: counts\ntasks:\n  - name: n\n    type: sql\n    datasource: lite\n    sql: select 1 as one\n")
	e.want(0, []string{"workflow", "apply", "--project", "p", "-f", uses})
	e.want(0, []string{"datasource", "list"}, "p/counts")
	e.want(1, []string{"datasource", "delete", "lite"}, `datasource "lite" is used by the latest version of p/counts`)
	other := e.file("other.yaml", "name: counts\ntasks:\n  - name: n\n    command: echo hi\n")
	e.want(0, []string{"workflow", "apply", "--project", "p", "-f", other})
	e.want(0, []string{"datasource", "delete", "lite"}, "datasource lite deleted")
	e.want(1, []string{"datasource", "show", "lite"}, "not found")
	missing := e.file("missing.yaml", "name: m\ntasks:\n  - name: n\n    type: sql\n    datasource: nowhere\n    sql: select 1\n")
	e.want(2, []string{"workflow", "apply", "--project", "p", "-f", missing}, `datasource "nowhere" does not exist`)
}
