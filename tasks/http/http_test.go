package http

import (
	"bytes"
	"context"
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
