package spec

import (
	"strings"
	"testing"
)

func TestTenantNames(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		yaml, err string
	}{
		{"name: w\ntenant: etl_user\ntasks:\n  - {name: a, command: x, tenant: ops-1}\n", ""},
		{"name: w\ntenant: Root\ntasks:\n  - {name: a, command: x}\n", `workflow: tenant "Root"`},
		{"name: w\ntasks:\n  - {name: a, command: x, tenant: \"1abc\"}\n", `tenant "1abc"`},
		{"name: w\ntasks:\n  - {name: a, command: x, tenant: \"a;rm -rf\"}\n", `tenant "a;rm -rf"`},
		{"name: w\ntasks:\n  - {name: a, command: x, tenant: " + strings.Repeat("a", 33) + "}\n", "tenant"},
	} {
		w, err := Parse([]byte(c.yaml))
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%q: %v", c.yaml, err)
		case c.err == "" && (w.Tenant != "etl_user" || w.Tasks[0].Tenant != "ops-1"):
			t.Errorf("%q: tenants %q %q", c.yaml, w.Tenant, w.Tasks[0].Tenant)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%q: error %v, want %q", c.yaml, err, c.err)
		}
	}
}
