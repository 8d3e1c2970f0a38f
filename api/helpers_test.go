package api

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/secret"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/testkit/authtest"
	"github.com/beluga-scheduler/beluga/testkit/mariadbtest"
)

// bundle is one API under test: a real store on a temp SQLite file behind
// an httptest server.
type bundle struct {
	t        *testing.T
	srv      *httptest.Server
	store    *store.Store
	notified atomic.Int64
	logs     *observer.ObservedLogs
	token    string // admin's: sent on every request that names no Authorization
	client   *http.Client
}

// from is b with its requests sent from local address ip (any of
// 127.0.0.0/8 on Linux), as from another client machine.
func (b *bundle) from(ip string) *bundle {
	tr := b.srv.Client().Transport.(*http.Transport).Clone()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(ip)}}
	tr.DialContext = d.DialContext
	return &bundle{t: b.t, srv: b.srv, store: b.store, logs: b.logs, token: b.token, client: &http.Client{Transport: tr}}
}

type options struct {
	logs         LogReader
	cluster      func(ctx context.Context) (any, error)
	ready        func() bool
	listen       string // Deps.Listen; "" is taken as loopback
	allowedHosts []string
	secrets      *secret.Box
	mariadb      bool // the store on MariaDB (testkit/mariadbtest), not SQLite
	endRecheck   time.Duration
}

func setup(t *testing.T, o options) *bundle {
	t.Helper()
	ctx := context.Background()
	core, logs := observer.New(zap.DebugLevel)
	log := zap.New(core)
	url := "sqlite://" + filepath.Join(t.TempDir(), "beluga.db")
	if o.mariadb {
		url = mariadbtest.URL(t)
	}
	st, err := store.Open(ctx, url, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	b := &bundle{t: t, store: st, logs: logs, token: authtest.Admin(t, st)}
	h := NewHandler(Deps{Store: st, Notify: func() { b.notified.Add(1) }, Logs: o.logs,
		Cluster: o.cluster, Ready: o.ready, Log: log, Listen: o.listen, AllowedHosts: o.allowedHosts, Secrets: o.secrets,
		EndRecheck: o.endRecheck})
	b.srv = httptest.NewServer(h)
	t.Cleanup(b.srv.Close)
	return b
}

type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) json(t *testing.T, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// errorBody decodes an error answer and checks its status and code.
func (r resp) wantError(t *testing.T, status int, code string) ErrorDetail {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Fatalf("error Content-Type %q", ct)
	}
	// Every 429 says when to come back (item 22.8).
	if ra := r.header.Get("Retry-After"); status == http.StatusTooManyRequests && (ra == "" || strings.Trim(ra, "0123456789") != "" || ra == "0") {
		t.Fatalf("429 with Retry-After %q, want whole seconds > 0", ra)
	}
	var e ErrorBody
	r.json(t, &e)
	if e.Error.Code != code || e.Error.Message == "" {
		t.Fatalf("error %+v, want code %s and a message", e.Error, code)
	}
	if e.Error.RequestID == "" || e.Error.RequestID != r.header.Get("X-Request-Id") {
		t.Fatalf("error request id %q, header %q", e.Error.RequestID, r.header.Get("X-Request-Id"))
	}
	return e.Error
}

func (r resp) want(t *testing.T, status int) resp {
	t.Helper()
	if r.status != status {
		t.Fatalf("status %d, want %d; body %s", r.status, status, r.body)
	}
	return r
}

func (b *bundle) do(method, path, contentType string, body io.Reader) resp {
	b.t.Helper()
	return b.request(method, path, "", contentType, body)
}

// request sends one request with the Host (when not "") and header pairs
// given, as the admin unless the pairs name Authorization ("": anonymous).
func (b *bundle) request(method, path, host, contentType string, body io.Reader, header ...string) resp {
	b.t.Helper()
	req, err := http.NewRequest(method, b.srv.URL+path, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if host != "" {
		req.Host = host
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	req.Header.Set("Authorization", "Bearer "+b.token)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if req.Header.Get("Authorization") == "" {
		req.Header.Del("Authorization")
	}
	client := b.srv.Client()
	if b.client != nil {
		client = b.client
	}
	res, err := client.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		b.t.Fatal(err)
	}
	return resp{status: res.StatusCode, header: res.Header, body: data}
}

// tokenOf returns a token of user name, made with role on first use.
func (b *bundle) tokenOf(name, role string) string {
	b.t.Helper()
	if u, err := b.store.UserGet(context.Background(), name); err == nil {
		return authtest.Token(b.t, b.store, u.ID)
	}
	return authtest.User(b.t, b.store, name, role)
}

// as sends one request with token (from tokenOf; "": anonymous).
func (b *bundle) as(token, method, path, body string) resp {
	b.t.Helper()
	ct := "application/json"
	if body == "" {
		ct = ""
	}
	auth := ""
	if token != "" {
		auth = "Bearer " + token
	}
	return b.request(method, path, "", ct, strings.NewReader(body), "Authorization", auth)
}

func (b *bundle) get(path string) resp { return b.do("GET", path, "", nil) }

func (b *bundle) send(method, path, body string) resp {
	ct := "application/json"
	if body == "" {
		ct = ""
	}
	return b.do(method, path, ct, strings.NewReader(body))
}

func (b *bundle) putSpec(project, name, contentType, spec string) resp {
	return b.do("PUT", "/api/v1/projects/"+project+"/workflows/"+name, contentType, strings.NewReader(spec))
}

func (b *bundle) mustProject(name string) {
	b.t.Helper()
	b.send("POST", "/api/v1/projects", `{"name":"`+name+`"}`).want(b.t, http.StatusCreated)
}

const etlYAML = `name: nightly_etl
params: {bizdate: "20260101"}
tasks:
  - name: extract
    command: echo extract ${bizdate}
    retries: 2
    retry_interval: 30s
  - name: load
    command: echo load
    depends_on: [extract]
`

// mustWorkflow makes project p with workflow nightly_etl version 1.
func (b *bundle) mustWorkflow(p string) {
	b.t.Helper()
	b.mustProject(p)
	b.putSpec(p, "nightly_etl", "application/yaml", etlYAML).want(b.t, http.StatusCreated)
}

// mustRun starts nightly_etl in p and returns the instance.
func (b *bundle) mustRun(p, body string) Instance {
	b.t.Helper()
	var inst Instance
	b.send("POST", "/api/v1/projects/"+p+"/workflows/nightly_etl/runs", body).want(b.t, http.StatusCreated).json(b.t, &inst)
	return inst
}

// fakeLogs is a LogReader over an in-memory log.
type fakeLogs struct {
	mu    sync.Mutex
	data  []byte
	err   error
	calls []model.TaskInstance
}

func (f *fakeLogs) ReadLog(_ context.Context, t model.TaskInstance, offset, limit int64) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, t)
	if f.err != nil {
		return nil, f.err
	}
	if offset >= int64(len(f.data)) {
		return nil, nil
	}
	end := min(offset+limit, int64(len(f.data)))
	return bytes.Clone(f.data[offset:end]), nil
}
