package spec

import (
	"slices"
	"strings"
	"testing"
)

func TestSecretParams(t *testing.T) {
	t.Parallel()
	ok := `name: w
params: {db_password: x, day: "$[yyyyMMdd]"}
secret_params: [db_password]
tasks:
  - name: a
    command: echo
    params: {token: t, db_password: y}
    secret_params: [token]
`
	w, err := Parse([]byte(ok))
	if err != nil {
		t.Fatal(err)
	}
	if got := w.SecretNames(); !slices.Equal(got, []string{"db_password", "token"}) {
		t.Fatalf("SecretNames = %v", got)
	}
	bad := []struct{ name, spec, want string }{
		{"unknown workflow param", "name: w\nparams: {a: x}\nsecret_params: [b]\ntasks: [{name: a, command: echo}]\n",
			`workflow: secret_params names "b", which is not one of its params`},
		{"unknown task param", "name: w\ntasks: [{name: a, command: echo, secret_params: [pw]}]\n",
			`task "a": secret_params names "pw", which is not one of its params`},
		{"twice", "name: w\nparams: {a: x}\nsecret_params: [a, a]\ntasks: [{name: a, command: echo}]\n",
			`secret_params lists "a" twice`},
		{"yaml not a list", "name: w\nparams: {a: x}\nsecret_params: a\ntasks: [{name: a, command: echo}]\n",
			"secret_params"},
		{"json not a list", `{"name": "w", "params": {"a": "x"}, "secret_params": "a", "tasks": [{"name": "a", "command": "echo"}]}`,
			"secret_params"},
		{"json task not a list", `{"name": "w", "tasks": [{"name": "a", "command": "echo", "params": {"a": "x"}, "secret_params": {"a": 1}}]}`,
			"secret_params"},
	}
	for _, c := range bad {
		_, err := Parse([]byte(c.spec))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want an error containing %q", c.name, err, c.want)
		}
	}
}

// A spec without secret_params hashes as before the field existed.
func TestSecretParamsLeaveHashAlone(t *testing.T) {
	t.Parallel()
	w, err := Parse([]byte(designYAML))
	if err != nil {
		t.Fatal(err)
	}
	canon, _, err := w.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(canon), "secret_params") {
		t.Fatalf("canonical form of a spec without secrets mentions them: %s", canon)
	}
}
