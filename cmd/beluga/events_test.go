package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestEventAndAlertVerbs(t *testing.T) {
	e := newEnv(t)
	key := filepath.Join(e.dir, "hook.key")
	if err := os.WriteFile(key, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	out := e.want(0, []string{"subscription", "put", "hook", "--url", "http://127.0.0.1:9/x", "--project", "demo", "--secret-file", key},
		`"secret_set": true`, `"project": "demo"`)
	if strings.Contains(out, "s3cret") {
		t.Fatalf("the secret is shown: %s", out)
	}
	e.want(0, []string{"subscription", "list"}, `"name": "hook"`)
	e.want(0, []string{"subscription", "deliveries", "hook"}, `[]`)
	e.want(2, []string{"subscription", "put", "bad", "--url", "ftp://x"}, "http or https")
	e.want(2, []string{"subscription", "put", "hook", "--url", "http://x/", "--secret-file", filepath.Join(e.dir, "none")}, "--secret-file")
	e.want(0, []string{"subscription", "delete", "hook"}, "subscription hook deleted")

	e.want(0, []string{"alert-channel", "put", "ops", "--kind", "email", "--host", "smtp.example.com", "--from", "b@example.com",
		"--to", "ops@example.com,oncall@example.com"}, `"oncall@example.com"`, `"kind": "email"`)
	e.want(2, []string{"alert-channel", "put", "ops", "--kind", "pager"}, "use webhook, email or script")
	e.want(0, []string{"alert-channel", "list"}, `"name": "ops"`)
	e.want(0, []string{"alert", "list"}, `[]`)
	e.want(0, []string{"alert-channel", "delete", "ops"}, "alert channel ops deleted")
}
