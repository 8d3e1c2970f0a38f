// Package http is the http task type: one request, run in the worker
// process. ${name} in the url (URL-escaped), headers and body is the
// task's param (in a JSON body, JSON-escaped: jsonbody.go); the task fails unless the status is expected, and can
// export values picked from a JSON response. The task's timeout bounds the
// request (the executor cancels it).
package http

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/beluga-scheduler/beluga/common/params"
	"github.com/beluga-scheduler/beluga/common/tasktype"
)

// Spec is the http type's fields.
type Spec struct {
	Method  string            `json:"method,omitempty"` // default GET
	URL     string            `json:"url"`
	Headers map[string]string `json:"headers,omitempty"`
	Body    string            `json:"body,omitempty"`
	// RawBody substitutes ${name} into a JSON body as plain text; by
	// default a JSON body gets each value escaped for where it stands
	// (jsonbody.go).
	RawBody            bool              `json:"raw_body,omitempty"`
	ExpectStatus       []int             `json:"expect_status,omitempty"` // default: any 2xx
	Outputs            map[string]string `json:"outputs,omitempty"`       // name -> path into a JSON response ("data.id", "items.0.id")
	InsecureSkipVerify bool              `json:"insecure_skip_verify,omitempty"`
}

// Payload is the spec with its params substituted, as dispatched.
type Payload struct {
	Method             string            `json:"method"`
	URL                string            `json:"url"`
	Headers            map[string]string `json:"headers,omitempty"`
	Body               string            `json:"body,omitempty"`
	ExpectStatus       []int             `json:"expect_status,omitempty"`
	Outputs            map[string]string `json:"outputs,omitempty"`
	InsecureSkipVerify bool              `json:"insecure_skip_verify,omitempty"`
}

const (
	maxRedirects = 10
	failBodyLen  = 1 << 10  // a failure quotes this much of the body
	logBodyLen   = 64 << 10 // the log shows this much of the response
	maxBodyLen   = 16 << 20 // read for outputs at most
)

// placeholders are the ${name} references of a text.
var placeholders = regexp.MustCompile(`\$\{[A-Za-z_][A-Za-z0-9_]*\}`)

var methods = []string{"GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"}

// Type is the http task type.
var Type = &tasktype.Def{
	Name:      "http",
	Summary:   "an HTTP request, its status checked",
	Placement: tasktype.Worker,
	Spec:      func() tasktype.Spec { return &Spec{} },
	Check:     func(s tasktype.Spec) []string { return check(s.(*Spec)) },
	Payload:   func(s tasktype.Spec, in tasktype.Inputs) (any, error) { return resolve(s.(*Spec), in.Params) },
	Run: func(ctx context.Context, j tasktype.Job) tasktype.Outcome {
		var p Payload
		if err := json.Unmarshal(j.Payload, &p); err != nil {
			return tasktype.Outcome{Err: fmt.Errorf("bad http payload: %w", err)}
		}
		return run(ctx, &p, j.Log)
	},
}

func method(s *Spec) string {
	if s.Method == "" {
		return "GET"
	}
	return strings.ToUpper(s.Method)
}

func check(s *Spec) []string {
	var problems []string
	if !slices.Contains(methods, method(s)) {
		problems = append(problems, fmt.Sprintf("method %q: use one of %s", s.Method, strings.Join(methods, ", ")))
	}
	if strings.TrimSpace(s.URL) == "" {
		problems = append(problems, "url is required for type http")
	} else {
		// Params are only known per run: check the URL with each ${name} as a
		// placeholder.
		u, err := url.Parse(placeholders.ReplaceAllString(s.URL, "x"))
		switch {
		case err != nil:
			problems = append(problems, fmt.Sprintf("url %q: %v", s.URL, err))
		case u.Scheme != "http" && u.Scheme != "https":
			problems = append(problems, fmt.Sprintf("url %q: want an http:// or https:// URL", s.URL))
		case u.Host == "":
			problems = append(problems, fmt.Sprintf("url %q: no host", s.URL))
		}
	}
	for _, c := range s.ExpectStatus {
		if c < 100 || c > 599 {
			problems = append(problems, fmt.Sprintf("expect_status %d: a status is 100 to 599", c))
		}
	}
	for _, name := range sortedKeys(s.Headers) {
		if !validToken(name) {
			problems = append(problems, fmt.Sprintf("headers: %q is not a header name", name))
		}
	}
	for _, name := range sortedKeys(s.Outputs) {
		if !params.IsName(name) {
			problems = append(problems, fmt.Sprintf("outputs: %q is not an identifier ([A-Za-z_][A-Za-z0-9_]*)", name))
		} else if strings.TrimSpace(s.Outputs[name]) == "" {
			problems = append(problems, fmt.Sprintf("outputs: %s has no path", name))
		}
	}
	return problems
}

func resolve(s *Spec, ps map[string]string) (*Payload, error) {
	p := &Payload{Method: method(s), ExpectStatus: s.ExpectStatus, Outputs: s.Outputs, InsecureSkipVerify: s.InsecureSkipVerify}
	var err error
	if p.URL, err = params.Substitute(s.URL, ps, url.QueryEscape); err != nil {
		return nil, fmt.Errorf("url: %w", err)
	}
	if !s.RawBody && jsonBody(s.Body, s.Headers) {
		p.Body, err = substituteJSON(s.Body, ps)
	} else {
		p.Body, err = params.Substitute(s.Body, ps, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("body: %w", err)
	}
	if len(s.Headers) > 0 {
		p.Headers = make(map[string]string, len(s.Headers))
		for k, v := range s.Headers {
			if p.Headers[k], err = params.Substitute(v, ps, nil); err != nil {
				return nil, fmt.Errorf("header %s: %w", k, err)
			}
		}
	}
	return p, nil
}

func run(ctx context.Context, p *Payload, log io.Writer) tasktype.Outcome {
	req, err := nethttp.NewRequestWithContext(ctx, p.Method, p.URL, strings.NewReader(p.Body))
	if err != nil {
		return tasktype.Outcome{Err: fmt.Errorf("build request: %w", err)}
	}
	for k, v := range p.Headers {
		req.Header.Set(k, v)
	}
	tr := nethttp.DefaultTransport.(*nethttp.Transport).Clone()
	if p.InsecureSkipVerify {
		tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: true} //nolint:gosec // asked for by the spec
	}
	defer tr.CloseIdleConnections()
	client := &nethttp.Client{Transport: tr, CheckRedirect: func(_ *nethttp.Request, via []*nethttp.Request) error {
		if len(via) >= maxRedirects {
			return fmt.Errorf("stopped after %d redirects", maxRedirects)
		}
		return nil
	}}
	fmt.Fprintf(log, "> %s %s\n", p.Method, p.URL)
	resp, err := client.Do(req)
	if err != nil {
		return tasktype.Outcome{Err: fmt.Errorf("%s %s: %w", p.Method, p.URL, err)}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBodyLen))
	if err != nil {
		return tasktype.Outcome{Err: fmt.Errorf("read response: %w", err)}
	}
	fmt.Fprintf(log, "< %s\n%s\n", resp.Status, body[:min(len(body), logBodyLen)])
	if !expected(resp.StatusCode, p.ExpectStatus) {
		want := "a 2xx status"
		if len(p.ExpectStatus) > 0 {
			want = fmt.Sprint(p.ExpectStatus)
		}
		return tasktype.Outcome{Err: fmt.Errorf("status %s, expected %s; body: %s", resp.Status, want, body[:min(len(body), failBodyLen)])}
	}
	if len(p.Outputs) == 0 {
		return tasktype.Outcome{}
	}
	outs, err := pick(body, p.Outputs)
	return tasktype.Outcome{Outputs: outs, Err: err}
}

func expected(code int, want []int) bool {
	if len(want) == 0 {
		return code >= 200 && code < 300
	}
	return slices.Contains(want, code)
}

// pick takes each output from the JSON body by its path: keys separated by
// '.', a number indexing a list. A string is its text, other values their
// JSON.
func pick(body []byte, paths map[string]string) (map[string]string, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("outputs: the response is not JSON: %w", err)
	}
	out := make(map[string]string, len(paths))
	for _, name := range sortedKeys(paths) {
		v, err := walk(doc, paths[name])
		if err != nil {
			return nil, fmt.Errorf("output %s: path %q: %w", name, paths[name], err)
		}
		switch v := v.(type) {
		case string:
			out[name] = v
		default:
			b, _ := json.Marshal(v)
			out[name] = string(b)
		}
	}
	return out, nil
}

func walk(doc any, path string) (any, error) {
	cur := doc
	for _, key := range strings.Split(path, ".") {
		switch c := cur.(type) {
		case map[string]any:
			v, ok := c[key]
			if !ok {
				return nil, fmt.Errorf("no key %q in the response", key)
			}
			cur = v
		case []any:
			i, err := strconv.Atoi(key)
			if err != nil || i < 0 || i >= len(c) {
				return nil, fmt.Errorf("%q is not an index of a list of %d", key, len(c))
			}
			cur = c[i]
		default:
			return nil, errors.New("the path goes past a value that is not an object or a list at " + strconv.Quote(key))
		}
	}
	return cur, nil
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// validToken: an HTTP header name (RFC 9110 token).
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return true
}
