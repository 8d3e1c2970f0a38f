package api

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/api/ui"
	"github.com/beluga-scheduler/beluga/common/model"
)

// req sends one request with the Host (when not "") and header pairs given.
func (b *bundle) req(method, path, host, contentType, body string, header ...string) resp {
	b.t.Helper()
	return b.request(method, path, host, contentType, strings.NewReader(body), header...)
}

// TestBodyTypes: a body must declare a type the operation takes; the types
// a page of another site may send without asking are refused, and refused
// bodies change nothing.
func TestBodyTypes(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.mustWorkflow("p")
	b.send("POST", "/api/v1/task-groups", `{"name":"g","capacity":1}`).want(t, http.StatusCreated)
	const runs = "/api/v1/projects/p/workflows/nightly_etl/runs"
	for _, tc := range []struct {
		method, path, ct, body string
		status                 int
		want                   string // in the 415's message
	}{
		{"POST", "/api/v1/projects", "text/plain", `{"name":"a"}`, 415, "text/plain is not supported; send the body as application/json"},
		{"POST", "/api/v1/projects", "text/plain;charset=UTF-8", `{"name":"a"}`, 415, "application/json"},
		{"POST", "/api/v1/projects", "application/x-www-form-urlencoded", `{"name":"a"}`, 415, "application/json"},
		{"POST", "/api/v1/projects", "multipart/form-data; boundary=x", `{"name":"a"}`, 415, "multipart/form-data"},
		{"POST", "/api/v1/projects", "", `{"name":"a"}`, 415, "no Content-Type; send it as application/json"},
		{"POST", "/api/v1/projects", "json", `{"name":"a"}`, 415, "Content-Type json is not supported"},
		{"POST", "/api/v1/projects", "application/json;;", `{"name":"a"}`, 415, `bad Content-Type "application/json;;"`},
		{"POST", "/api/v1/projects", "application/yaml", `{"name":"a"}`, 415, "application/yaml"},
		{"POST", "/api/v1/projects", "application/json; charset=utf-8", `{"name":"ok1"}`, 201, ""},
		{"POST", "/api/v1/projects", "Application/JSON", `{"name":"ok2"}`, 201, ""},
		{"POST", runs, "text/plain", `{}`, 415, "application/json"},
		{"POST", runs, "", "", 201, ""},           // the body is optional: none needs no type
		{"POST", runs, "text/plain", "", 201, ""}, // nor does an empty one
		{"PUT", schedPath, "text/plain", `{"cron":"@daily"}`, 415, "application/json"},
		{"POST", "/api/v1/task-groups", "text/plain", `{"name":"h","capacity":1}`, 415, "application/json"},
		{"PATCH", "/api/v1/task-groups/g", "application/x-www-form-urlencoded", `{"capacity":5}`, 415, "application/json"},
		{"PUT", "/api/v1/projects/p/workflows/w2", "text/plain", etlYAML, 415, "send the spec as application/json or application/yaml"},
		{"PUT", "/api/v1/projects/p/workflows/w2", "application/octet-stream", etlYAML, 415, "application/octet-stream"},
		{"PUT", "/api/v1/projects/p/workflows/nightly_etl", "application/x-yaml", etlYAML, 200, ""},
		{"PUT", "/api/v1/projects/p/workflows/nightly_etl", "text/yaml", etlYAML, 200, ""},
		{"PUT", "/api/v1/projects/p/workflows/j", "application/json", `{"tasks":[{"name":"a","command":"x"}]}`, 201, ""},
	} {
		r := b.do(tc.method, tc.path, tc.ct, strings.NewReader(tc.body))
		if tc.status != http.StatusUnsupportedMediaType {
			r.want(t, tc.status)
			continue
		}
		if e := r.wantError(t, tc.status, CodeUnsupportedMedia); !strings.Contains(e.Message, tc.want) {
			t.Fatalf("%s %s as %q: message %q lacks %q", tc.method, tc.path, tc.ct, e.Message, tc.want)
		}
	}
	var ps List[Project]
	b.get("/api/v1/projects").want(t, http.StatusOK).json(t, &ps)
	var names []string
	for _, p := range ps.Items {
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != "ok1,ok2,p" {
		t.Fatalf("projects %v: a refused body made one", names)
	}
	var g TaskGroup
	b.get("/api/v1/task-groups/g").want(t, http.StatusOK).json(t, &g)
	if g.Capacity != 1 {
		t.Fatalf("group resized by a refused body: %+v", g)
	}
	b.get(schedPath).wantError(t, http.StatusNotFound, CodeNotFound)
	b.get("/api/v1/projects/p/workflows/w2").wantError(t, http.StatusNotFound, CodeNotFound)
}

// TestCrossSiteRefused: changes a browser marks as sent by another site
// are refused; the UI's own requests (same origin) and tools (no
// browser headers) pass, and reads stay open.
func TestCrossSiteRefused(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.mustWorkflow("p")
	b.send("POST", "/api/v1/task-groups", `{"name":"g","capacity":1}`).want(t, http.StatusCreated)
	self := b.srv.URL // http://127.0.0.1:PORT
	port := self[strings.LastIndex(self, ":")+1:]
	otherPort := "1"
	if port == "1" {
		otherPort = "2"
	}
	const wf = "/api/v1/projects/p/workflows/nightly_etl"
	n := 0
	newProject := func() string { n++; return `{"name":"x` + itoa(int64(n)) + `"}` }
	for _, tc := range []struct {
		name, method, path, host, ct, body string
		header                             []string
		status                             int
		want                               string // in the 403's message
	}{
		{"cross-site POST", "POST", "/api/v1/projects", "", "application/json", newProject(), []string{"Sec-Fetch-Site", "cross-site"}, 403, "Sec-Fetch-Site: cross-site"},
		{"cross-site PUT", "PUT", wf, "", "application/yaml", etlYAML, []string{"Sec-Fetch-Site", "cross-site"}, 403, "PUT"},
		{"cross-site PATCH", "PATCH", "/api/v1/task-groups/g", "", "application/json", `{"capacity":5}`, []string{"Sec-Fetch-Site", "cross-site"}, 403, "cross-site"},
		{"cross-site DELETE", "DELETE", wf, "", "", "", []string{"Sec-Fetch-Site", "cross-site"}, 403, "DELETE"},
		{"cross-site no-cors run", "POST", wf + "/runs", "", "text/plain", "{}", []string{"Sec-Fetch-Site", "cross-site", "Origin", "http://evil.example"}, 403, "cross-site"},
		{"foreign Origin", "POST", "/api/v1/projects", "", "application/json", newProject(), []string{"Origin", "http://evil.example"}, 403, `Origin "http://evil.example"`},
		{"foreign Origin, same-site claimed", "POST", "/api/v1/projects", "", "application/json", newProject(), []string{"Origin", "http://evil.example", "Sec-Fetch-Site", "same-site"}, 403, "Origin"},
		{"null Origin", "DELETE", wf, "", "", "", []string{"Origin", "null"}, 403, `Origin "null"`},
		{"Origin on another port", "POST", "/api/v1/projects", "", "application/json", newProject(), []string{"Origin", "http://127.0.0.1:" + otherPort}, 403, "Host"},
		{"https Origin without the port", "POST", "/api/v1/projects", "", "application/json", newProject(), []string{"Origin", "https://127.0.0.1"}, 403, "Origin"},
		{"same origin", "POST", "/api/v1/projects", "", "application/json", newProject(), []string{"Origin", self, "Sec-Fetch-Site", "same-origin"}, 201, ""},
		{"same origin, other case", "POST", "/api/v1/projects", "localhost:" + port, "application/json", newProject(), []string{"Origin", "http://LocalHost:" + port}, 201, ""},
		{"same-site without Origin", "POST", "/api/v1/projects", "", "application/json", newProject(), []string{"Sec-Fetch-Site", "same-site"}, 201, ""},
		{"typed in the address bar", "POST", "/api/v1/projects", "", "application/json", newProject(), []string{"Sec-Fetch-Site", "none"}, 201, ""},
		{"no browser headers (CLI, curl)", "POST", "/api/v1/projects", "", "application/json", newProject(), nil, 201, ""},
		{"cross-site GET", "GET", "/api/v1/projects", "", "", "", []string{"Sec-Fetch-Site", "cross-site", "Origin", "http://evil.example"}, 200, ""},
		{"cross-site GET of the UI", "GET", "/", "", "", "", []string{"Sec-Fetch-Site", "cross-site"}, 200, ""},
	} {
		r := b.req(tc.method, tc.path, tc.host, tc.ct, tc.body, tc.header...)
		if tc.status != http.StatusForbidden {
			if r.status != tc.status {
				t.Fatalf("%s: status %d, want %d: %s", tc.name, r.status, tc.status, r.body)
			}
			continue
		}
		if e := r.wantError(t, http.StatusForbidden, CodeForbidden); !strings.Contains(e.Message, tc.want) {
			t.Fatalf("%s: message %q lacks %q", tc.name, e.Message, tc.want)
		}
	}
	// Nothing refused took effect.
	var w Workflow
	b.get(wf).want(t, http.StatusOK).json(t, &w)
	var g TaskGroup
	b.get("/api/v1/task-groups/g").want(t, http.StatusOK).json(t, &g)
	var l InstanceList
	b.get("/api/v1/instances").want(t, http.StatusOK).json(t, &l)
	if w.Version != 1 || g.Capacity != 1 || len(l.Items) != 0 {
		t.Fatalf("a refused change took effect: version %d, capacity %d, %d runs", w.Version, g.Capacity, len(l.Items))
	}
}

func TestSameHost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		origin, host string
		same         bool
	}{
		{"http://b.example", "b.example", true},
		{"http://b.example", "b.example:80", true},
		{"https://b.example", "b.example", true}, // TLS ended at a proxy that passed the Host on
		{"https://b.example", "b.example:443", true},
		{"https://B.Example.", "b.example", true},
		{"http://b.example:8080", "b.example:8080", true},
		{"http://[::1]:5", "[::1]:5", true},
		{"http://b.example", "b.example:443", false},
		{"http://b.example:8080", "b.example", false},
		{"http://c.example", "b.example", false},
		{"null", "b.example", false},
		{"b.example", "b.example", false},
		{"http://b.example.evil.example", "b.example", false},
	} {
		if got := sameHost(tc.origin, tc.host); got != tc.same {
			t.Errorf("sameHost(%q, %q) = %v", tc.origin, tc.host, got)
		}
	}
}

// TestHostCheck: on a loopback listener only loopback Host names are
// answered (DNS rebinding points a foreign name at 127.0.0.1), unless
// allowed; elsewhere any Host, unless a list is given. /healthz stays open.
func TestHostCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		listen   string
		allowed  []string
		ok, no   []string
		noReason string // in the 403's message
	}{
		{"", nil, []string{"127.0.0.1:1", "localhost", "LocalHost.:9", "127.5.6.7:80", "[::1]:12345", "[::1]"},
			[]string{"evil.example:12345", "evil.example", "10.0.0.5:12345", "localhost.evil.example", "127.0.0.1.nip.io", "[::2]:1"},
			"listens on a loopback address and answers"},
		{"127.0.0.1:12345", nil, []string{"127.0.0.1:12345", "localhost:12345"}, []string{"evil.example:12345"}, "127.0.0.1:12345 and answers only localhost"},
		{"localhost:12345", nil, []string{"localhost:12345"}, []string{"evil.example:12345"}, "api.allowed_hosts (flag --allowed-hosts, env BELUGA_API_ALLOWED_HOSTS)"},
		{"[::1]:0", nil, []string{"[::1]:0", "127.0.0.1"}, []string{"evil.example"}, "loopback"},
		{"127.0.0.1:0", []string{"beluga.example.com", "10.0.0.5:8080"},
			[]string{"beluga.example.com:12345", "BELUGA.example.com", "10.0.0.5", "localhost:1"}, []string{"evil.example", "example.com", "10.0.0.6"}, "loopback"},
		{"127.0.0.1:0", []string{"*"}, []string{"evil.example:1", "localhost"}, nil, ""},
		{"0.0.0.0:12345", nil, []string{"evil.example:12345", "10.0.0.5", "localhost"}, nil, ""},
		{":12345", nil, []string{"evil.example"}, nil, ""},
		{"10.0.0.5:12345", nil, []string{"evil.example"}, nil, ""},
		{":12345", []string{"beluga.example.com"}, []string{"beluga.example.com:12345", "127.0.0.1:12345"}, []string{"evil.example:12345", "10.0.0.5"},
			"is not in api.allowed_hosts"},
	} {
		b := setup(t, options{listen: tc.listen, allowedHosts: tc.allowed})
		for _, host := range tc.ok {
			b.req("GET", "/api/v1/projects", host, "", "").want(t, http.StatusOK)
			b.req("GET", "/", host, "", "").want(t, http.StatusOK)
			if r := b.req("POST", "/api/v1/projects", host, "application/json", `{"name":"p`+itoa(int64(len(host)))+`"}`); r.status == http.StatusForbidden {
				t.Fatalf("listen %q, allowed %v: POST with Host %q refused: %s", tc.listen, tc.allowed, host, r.body)
			}
		}
		for _, host := range tc.no {
			for _, r := range []resp{
				b.req("GET", "/api/v1/projects", host, "", ""),
				b.req("GET", "/", host, "", ""),
				b.req("GET", "/ui/favicon.svg", host, "", ""),
				b.req("POST", "/api/v1/projects", host, "application/json", `{"name":"rebound"}`),
			} {
				e := r.wantError(t, http.StatusForbidden, CodeForbidden)
				if !strings.Contains(e.Message, `Host "`+host+`" is not allowed`) || !strings.Contains(e.Message, tc.noReason) {
					t.Fatalf("listen %q, allowed %v, Host %q: message %q", tc.listen, tc.allowed, host, e.Message)
				}
			}
			b.req("GET", "/healthz", host, "", "").want(t, http.StatusOK) // probes name a pod by its IP
		}
		if len(tc.no) > 0 {
			b.get("/api/v1/projects/rebound").wantError(t, http.StatusNotFound, CodeNotFound)
		}
	}
}

func TestCheckAllowedHosts(t *testing.T) {
	t.Parallel()
	if err := CheckAllowedHosts([]string{"beluga.example.com", "10.0.0.5", "[::1]:8080", "b.example:443", "*"}); err != nil {
		t.Fatal(err)
	}
	err := CheckAllowedHosts([]string{"ok.example", "http://beluga.example.com/", "*.example.com", "a b"})
	if err == nil {
		t.Fatal("bad entries accepted")
	}
	for _, want := range []string{`"http://beluga.example.com/"`, `"*.example.com"`, `"a b"`, "api.allowed_hosts"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q lacks %s", err, want)
		}
	}
	if strings.Contains(err.Error(), "ok.example") {
		t.Fatalf("error %q names a good entry", err)
	}
}

// TestNoSniff: every answer, JSON, error, task log, UI, carries nosniff
// (a task log is text/plain with whatever the task printed); the UI keeps
// its own headers.
func TestNoSniff(t *testing.T) {
	t.Parallel()
	logs := &fakeLogs{data: []byte("<html><script>alert(1)</script>\n")}
	b := setup(t, options{logs: logs})
	b.mustWorkflow("p")
	inst := b.mustRun("p", "")
	task := &model.TaskInstance{WorkflowInstanceID: inst.ID, Name: "extract", Type: "shell", State: model.TaskRunning,
		Attempt: 1, Host: "w1:1234", LogPath: "/logs/1.log"}
	if err := b.store.TaskInsert(context.Background(), []*model.TaskInstance{task}); err != nil {
		t.Fatal(err)
	}
	for _, r := range []resp{
		b.get("/api/v1/projects").want(t, http.StatusOK),
		b.get("/api/v1/task-instances/"+itoa(task.ID)+"/log").want(t, http.StatusOK),
		b.get("/api/v1/openapi.yaml").want(t, http.StatusOK),
		b.get("/healthz").want(t, http.StatusOK),
		b.get("/").want(t, http.StatusOK),
		b.get("/ui/favicon.svg").want(t, http.StatusOK),
		b.get("/nope").want(t, http.StatusNotFound),
		b.do("POST", "/api/v1/projects", "text/plain", strings.NewReader(`{"name":"x"}`)).want(t, http.StatusUnsupportedMediaType),
		b.req("GET", "/api/v1/projects", "evil.example", "", "").want(t, http.StatusForbidden),
		b.req("POST", "/api/v1/projects", "", "application/json", `{"name":"x"}`, "Sec-Fetch-Site", "cross-site").want(t, http.StatusForbidden),
	} {
		if got := r.header.Values("X-Content-Type-Options"); len(got) != 1 || got[0] != "nosniff" {
			t.Fatalf("X-Content-Type-Options %q on a %d %s", got, r.status, r.header.Get("Content-Type"))
		}
	}
	if r := b.get("/"); r.header.Get("Content-Security-Policy") != ui.ContentSecurityPolicy {
		t.Fatalf("the UI lost its CSP: %q", r.header.Get("Content-Security-Policy"))
	}
}
