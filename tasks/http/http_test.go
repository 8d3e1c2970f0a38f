package http

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/common/tasktype"
)

func runSpec(t *testing.T, s *Spec, ps map[string]string) (tasktype.Outcome, string) {
	t.Helper()
	if problems := check(s); len(problems) > 0 {
		t.Fatalf("spec refused: %v", problems)
	}
	p, err := resolve(s, ps)
	if err != nil {
		t.Fatal(err)
	}
	var log bytes.Buffer
	return run(context.Background(), p, &log), log.String()
}

func TestHTTPFailureNamesStatusAndBody(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, _ *nethttp.Request) {
		w.WriteHeader(503)
		fmt.Fprint(w, "busy "+strings.Repeat("z", 5000))
	}))
	defer srv.Close()
	out, _ := runSpec(t, &Spec{URL: srv.URL}, nil)
	if out.Err == nil || !strings.Contains(out.Err.Error(), "status 503 Service Unavailable, expected a 2xx status; body: busy zz") {
		t.Fatalf("err = %v", out.Err)
	}
	if n := len(out.Err.Error()); n > 1200 {
		t.Errorf("message of %d bytes: the body should be cut at 1 KiB", n)
	}
}

func TestHTTPExpectStatusAndRedirects(t *testing.T) {
	t.Parallel()
	hops := 0
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if r.URL.Path == "/loop" {
			hops++
			nethttp.Redirect(w, r, "/loop", nethttp.StatusFound)
			return
		}
		if r.URL.Path == "/hop" {
			nethttp.Redirect(w, r, "/created", nethttp.StatusFound)
			return
		}
		w.WriteHeader(201)
		fmt.Fprint(w, `{"items": [{"id": 7}]}`)
	}))
	defer srv.Close()
	out, _ := runSpec(t, &Spec{URL: srv.URL + "/hop", ExpectStatus: []int{201}, Outputs: map[string]string{"id": "items.0.id"}}, nil)
	if out.Err != nil || out.Outputs["id"] != "7" {
		t.Fatalf("outcome %+v", out)
	}
	out, _ = runSpec(t, &Spec{URL: srv.URL + "/x", ExpectStatus: []int{200}}, nil)
	if out.Err == nil || !strings.Contains(out.Err.Error(), "status 201 Created, expected [200]") {
		t.Fatalf("err = %v", out.Err)
	}
	out, _ = runSpec(t, &Spec{URL: srv.URL + "/loop"}, nil)
	if out.Err == nil || !strings.Contains(out.Err.Error(), "stopped after 10 redirects") || hops != 10 {
		t.Fatalf("err = %v after %d hops", out.Err, hops)
	}
	out, _ = runSpec(t, &Spec{URL: srv.URL + "/x", Outputs: map[string]string{"id": "items.3.id"}}, nil)
	if out.Err == nil || !strings.Contains(out.Err.Error(), `output id: path "items.3.id"`) {
		t.Fatalf("err = %v", out.Err)
	}
}

func TestHTTPTLSVerifiedByDefault(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, _ *nethttp.Request) {}))
	defer srv.Close()
	if out, _ := runSpec(t, &Spec{URL: srv.URL}, nil); out.Err == nil || !strings.Contains(out.Err.Error(), "certificate") {
		t.Fatalf("self-signed server accepted: %v", out.Err)
	}
	if out, _ := runSpec(t, &Spec{URL: srv.URL, InsecureSkipVerify: true}, nil); out.Err != nil {
		t.Fatalf("insecure_skip_verify: %v", out.Err)
	}
}

func TestHTTPMissingParamIsAnError(t *testing.T) {
	t.Parallel()
	if _, err := resolve(&Spec{URL: "http://h/?d=${day}"}, map[string]string{}); err == nil || !strings.Contains(err.Error(), "${day} names no param") {
		t.Fatalf("err = %v", err)
	}
}

// TestHTTPJSONBodyEscapesParams: a param value that closes its JSON string
// and adds a field reaches the server as the string it is, not as a field;
// raw_body substitutes as text, on purpose.
func TestHTTPJSONBodyEscapesParams(t *testing.T) {
	t.Parallel()
	got := make(chan map[string]any, 1)
	srv := httptest.NewServer(nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		var m map[string]any
		if err := json.NewDecoder(r.Body).Decode(&m); err != nil {
			w.WriteHeader(400)
		}
		got <- m
	}))
	defer srv.Close()
	evil := `x", "role": "admin`
	body := `{"role": "user", "name": "${who}", "n": ${n}}`
	for _, c := range []struct {
		name    string
		headers map[string]string
	}{{"by content type", map[string]string{"content-type": "application/json; charset=utf-8"}}, {"by parsing", nil}} {
		out, _ := runSpec(t, &Spec{Method: "POST", URL: srv.URL, Body: body, Headers: c.headers}, map[string]string{"who": evil, "n": "7"})
		if out.Err != nil {
			t.Fatalf("%s: %v", c.name, out.Err)
		}
		if m := <-got; m["role"] != "user" || m["name"] != evil || m["n"] != 7.0 {
			t.Fatalf("%s: the server got %v", c.name, m)
		}
	}
	// Outside a string a value must be one JSON value.
	if _, err := resolve(&Spec{Method: "POST", URL: srv.URL, Body: body}, map[string]string{"who": "a", "n": `1, "role": "admin"`}); err == nil ||
		!strings.Contains(err.Error(), "${n} stands outside a JSON string") {
		t.Fatalf("err = %v", err)
	}
	// raw_body: the text goes in as it is.
	out, _ := runSpec(t, &Spec{Method: "POST", URL: srv.URL, Body: body, RawBody: true}, map[string]string{"who": evil, "n": "7"})
	if m := <-got; out.Err != nil || m["role"] != "admin" {
		t.Fatalf("raw_body: %v, the server got %v", out.Err, m)
	}
	// A body that is not JSON is text, as before.
	p, err := resolve(&Spec{Method: "POST", URL: srv.URL, Body: "a=${who}&b=1"}, map[string]string{"who": `"q"`})
	if err != nil || p.Body != `a="q"&b=1` {
		t.Fatalf("form body %q, %v", p.Body, err)
	}
	// A body that is one placeholder is its value, JSON or not.
	for _, v := range []string{`{"a": 1}`, "a=1&b=2"} {
		if p, err := resolve(&Spec{Method: "POST", URL: srv.URL, Body: "${doc}"}, map[string]string{"doc": v}); err != nil || p.Body != v {
			t.Fatalf("body ${doc} = %q: %q, %v", v, p.Body, err)
		}
	}
}
