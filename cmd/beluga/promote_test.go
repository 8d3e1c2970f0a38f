package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/testkit/authtest"
)

// TestPromoteCommands: beluga promote makes a change request and prints
// its diff; the author (here the admin) cannot approve it; rob, with
// approve on the target, rejects one and approves the next, which applies
// it; promotion list and show print them; bad arguments are usage errors.
func TestPromoteCommands(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.want(0, []string{"project", "create", "dev"})
	e.want(0, []string{"project", "create", "prod"})
	e.want(0, []string{"workflow", "apply", "-p", "prod", "-f", e.file("etl.yaml", etl)})
	e.want(0, []string{"workflow", "apply", "-p", "dev", "-f", e.file("etl2.yaml", strings.Replace(etl, "echo extract", "echo extract all", 1))})
	e.want(0, []string{"promotion", "set-gate", "-p", "prod", "--source", "dev", "--require-review"},
		"project prod: promotions from dev, review required")

	e.want(2, []string{"promote", "dev", "prod"}, "use SRC_PROJECT/WORKFLOW")
	e.want(2, []string{"promote", "dev/nightly_etl"}, "needs TARGET_PROJECT")
	e.want(1, []string{"promote", "dev/nope", "prod"}, "not found")
	e.want(2, []string{"promote", "prod/nightly_etl", "dev/x"}, "not a valid name")
	e.want(0, []string{"promote", "dev/nightly_etl", "prod", "-m", "extract all"},
		"change request 1: dev/nightly_etl v1 -> prod (open)", "message: extract all",
		"diff: prod v1 -> dev v1", `~ task extract command: "echo extract ${bizdate}" -> "echo extract all ${bizdate}"`)
	e.want(1, []string{"promotion", "approve", "-p", "prod", "1"}, "cannot review it")

	rob := authtest.User(t, e.store, "rob", "user")
	if err := e.store.GrantPut(context.Background(), "prod", "rob", "approve", "admin"); err != nil {
		t.Fatal(err)
	}
	asRob := func(code int, args []string, contains ...string) {
		t.Helper()
		var out, errb bytes.Buffer
		got := executeEnv(context.Background(), append([]string{"--server", e.url}, args...),
			func(k string) string { return map[string]string{"BELUGA_TOKEN": rob, "BELUGA_CONFIG_DIR": e.dir}[k] },
			strings.NewReader(""), &out, &errb)
		all := out.String() + errb.String()
		if got != code {
			t.Fatalf("%v: exit %d, want %d: %s", args, got, code, all)
		}
		for _, c := range contains {
			if !strings.Contains(all, c) {
				t.Fatalf("%v: output lacks %q:\n%s", args, c, all)
			}
		}
	}
	asRob(2, []string{"promotion", "approve", "-p", "prod", "x"}, "must be a positive number")
	asRob(0, []string{"promotion", "reject", "-p", "prod", "1", "-m", "later"}, "change request 1 rejected by rob")
	asRob(1, []string{"promotion", "approve", "-p", "prod", "1"}, "is rejected")
	e.want(0, []string{"promote", "dev/nightly_etl", "prod"}, "change request 2")
	asRob(0, []string{"promotion", "approve", "-p", "prod", "2", "-m", "ok"}, "change request 2 applied: prod/nightly_etl version 2 (from dev v1)")
	e.want(0, []string{"promotion", "list", "-p", "prod"}, "ID", "rejected", "applied", "rob", "v2")
	e.want(0, []string{"promotion", "show", "-p", "prod", "2"}, "applied as prod/nightly_etl version 2", "reviewer: rob")
	e.want(2, []string{"promotion", "list", "-p", "prod", "extra"})

	// A direct edit of the gated workflow shows as drift.
	e.want(0, []string{"workflow", "apply", "-p", "prod", "-f", e.file("etl.yaml", etl)})
	e.want(0, []string{"promotion", "gate", "-p", "prod"}, "DRIFT nightly_etl: version 3 edited by admin", "promoted version 2")
}
