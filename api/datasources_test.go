package api

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/common/secret"
	"github.com/beluga-scheduler/beluga/testkit/freeport"
)

func testBox(t *testing.T) *secret.Box {
	t.Helper()
	b, err := secret.FromKey([]byte(strings.Repeat("0123456789abcdef", 4)))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestDatasourcesPutGetHidesPassword(t *testing.T) {
	t.Parallel()
	b := setup(t, options{secrets: testBox(t)})
	const pw = "s3cr3t-PassW0rd"
	r := b.send("PUT", "/api/v1/datasources/wh", `{"type":"mysql","host":"db.internal","port":3307,"database":"sales","user":"etl","password":"`+pw+`","params":{"tls":"false"}}`).want(t, http.StatusCreated)
	if r.header.Get("Location") != "/api/v1/datasources/wh" {
		t.Fatalf("location %q", r.header.Get("Location"))
	}
	var d Datasource
	r.json(t, &d)
	if d.Name != "wh" || d.Type != "mysql" || d.Host != "db.internal" || d.Port != 3307 || d.User != "etl" || !d.PasswordSet || d.Params["tls"] != "false" {
		t.Fatalf("created %+v", d)
	}
	stored, err := b.store.DatasourceGet(context.Background(), "wh")
	if err != nil {
		t.Fatal(err)
	}
	if !secret.IsSealed(stored.PasswordSealed) || strings.Contains(stored.PasswordSealed, pw) {
		t.Fatalf("stored password %q is not sealed", stored.PasswordSealed)
	}
	for _, path := range []string{"/api/v1/datasources/wh", "/api/v1/datasources"} {
		g := b.get(path).want(t, http.StatusOK)
		if strings.Contains(string(g.body), pw) || strings.Contains(string(g.body), stored.PasswordSealed) || strings.Contains(string(g.body), `"password"`) {
			t.Fatalf("GET %s shows the password: %s", path, g.body)
		}
		if !strings.Contains(string(g.body), `"password_set":true`) {
			t.Fatalf("GET %s: no password_set: %s", path, g.body)
		}
	}
	// A PUT without password keeps it; "" removes it.
	b.send("PUT", "/api/v1/datasources/wh", `{"type":"mysql","host":"db2.internal","user":"etl"}`).want(t, http.StatusOK).json(t, &d)
	if !d.PasswordSet || d.Host != "db2.internal" || d.Port != 0 {
		t.Fatalf("replaced %+v", d)
	}
	b.send("PUT", "/api/v1/datasources/wh", `{"type":"mysql","host":"db2.internal","user":"etl","password":""}`).want(t, http.StatusOK).json(t, &d)
	if d.PasswordSet {
		t.Fatalf("password not removed: %+v", d)
	}
	b.send("DELETE", "/api/v1/datasources/wh", "").want(t, http.StatusNoContent)
	b.get("/api/v1/datasources/wh").wantError(t, http.StatusNotFound, CodeNotFound)
	b.send("DELETE", "/api/v1/datasources/wh", "").wantError(t, http.StatusNotFound, CodeNotFound)
}

func TestDatasourcesBadBodies(t *testing.T) {
	t.Parallel()
	b := setup(t, options{secrets: testBox(t)})
	for _, tc := range []struct{ name, body, want string }{
		{"no type", `{"host":"h","user":"u"}`, "type: is required"},
		{"bad type", `{"type":"oracle","host":"h","user":"u"}`, `type: must be one of mysql, postgres, sqlite, got "oracle"`},
		{"no host", `{"type":"postgres","user":"u"}`, "host: is required"},
		{"bad host", `{"type":"postgres","host":"a/b","user":"u"}`, "host: must be"},
		{"no user", `{"type":"mysql","host":"h"}`, "user: is required"},
		{"bad port", `{"type":"mysql","host":"h","user":"u","port":70000}`, "port: must be from 1 to 65535"},
		{"port as string", `{"type":"mysql","host":"h","user":"u","port":"3306"}`, `field "port"`},
		{"unknown field", `{"type":"mysql","host":"h","user":"u","pass":"x"}`, `unknown field "pass"`},
		{"params not strings", `{"type":"mysql","host":"h","user":"u","params":{"a":1}}`, `field "params"`},
		{"password in params", `{"type":"postgres","host":"h","user":"u","params":{"password":"x"}}`, "params.password: is set by its own field"},
		{"bad mysql param", `{"type":"mysql","host":"h","user":"u","params":{"parseTime":"maybe"}}`, "params:"},
		{"sqlite relative", `{"type":"sqlite","database":"x.db"}`, "database: must be an absolute file path"},
		{"sqlite with host", `{"type":"sqlite","database":"/tmp/x.db","host":"h"}`, "host: is not used by a sqlite datasource"},
		{"trailing data", `{"type":"sqlite","database":"/tmp/x.db"} {}`, "data after"},
		{"empty", ``, "empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := b.do("PUT", "/api/v1/datasources/x", "application/json", strings.NewReader(tc.body)).wantError(t, http.StatusBadRequest, CodeBadRequest)
			if !strings.Contains(e.Message, tc.want) {
				t.Fatalf("message %q lacks %q", e.Message, tc.want)
			}
		})
	}
	b.send("PUT", "/api/v1/datasources/a%20b", `{"type":"sqlite","database":"/tmp/x.db"}`).wantError(t, http.StatusBadRequest, CodeBadRequest)
	if l := b.get("/api/v1/datasources").want(t, http.StatusOK); !strings.Contains(string(l.body), `"items":[]`) {
		t.Fatalf("a bad body stored something: %s", l.body)
	}
}

func TestDatasourcesWithoutKey(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	e := b.send("PUT", "/api/v1/datasources/wh", `{"type":"mysql","host":"h","user":"u","password":"pw"}`).wantError(t, http.StatusServiceUnavailable, CodeUnavailable)
	if !strings.Contains(e.Message, "--secret-key-file") {
		t.Fatalf("message %q", e.Message)
	}
	// Without a password no key is needed.
	b.send("PUT", "/api/v1/datasources/wh", `{"type":"mysql","host":"h","user":"u"}`).want(t, http.StatusCreated)
}

func TestDatasourceTestEndpoint(t *testing.T) {
	t.Parallel()
	b := setup(t, options{secrets: testBox(t)})
	file := filepath.Join(t.TempDir(), "ok.db")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	b.send("PUT", "/api/v1/datasources/lite", `{"type":"sqlite","database":"`+file+`"}`).want(t, http.StatusCreated)
	var res DatasourceTest
	b.send("POST", "/api/v1/datasources/lite/test", "").want(t, http.StatusOK).json(t, &res)
	if !res.OK || res.Error != "" {
		t.Fatalf("sqlite test: %+v", res)
	}
	b.send("PUT", "/api/v1/datasources/gone", `{"type":"sqlite","database":"`+file+`.missing"}`).want(t, http.StatusCreated)
	b.send("POST", "/api/v1/datasources/gone/test", "").want(t, http.StatusOK).json(t, &res)
	if res.OK || !strings.Contains(res.Error, "no such file") {
		t.Fatalf("missing sqlite file: %+v", res)
	}
	port, err := freeport.One()
	if err != nil {
		t.Fatal(err)
	}
	const pw = "Very$ecret"
	b.send("PUT", "/api/v1/datasources/down", `{"type":"postgres","host":"127.0.0.1","port":`+strconv.Itoa(port)+`,"user":"u","password":"`+pw+`","params":{"sslmode":"disable"}}`).want(t, http.StatusCreated)
	b.send("POST", "/api/v1/datasources/down/test", "").want(t, http.StatusOK).json(t, &res)
	if res.OK || !strings.Contains(res.Error, "refused") || strings.Contains(res.Error, pw) {
		t.Fatalf("closed port: %+v", res)
	}
	b.send("POST", "/api/v1/datasources/nope/test", "").wantError(t, http.StatusNotFound, CodeNotFound)
}
