package standalone_test

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-sasl"
	"github.com/emersion/go-smtp"

	"github.com/beluga-scheduler/beluga/testkit/testcert"
)

// mailbox is an SMTP server for the test: STARTTLS with a test CA's
// certificate, PLAIN auth required, every accepted message kept.
type mailbox struct {
	mu   sync.Mutex
	msgs []mailMsg
	got  chan struct{}
	srv  *smtp.Server
	addr string
}

type mailMsg struct {
	from, user string
	to         []string
	tls        bool
	data       string
}

type mailSession struct {
	mb   *mailbox
	conn *smtp.Conn
	user string
	msg  mailMsg
}

func (s *mailSession) AuthMechanisms() []string { return []string{sasl.Plain} }
func (s *mailSession) Auth(string) (sasl.Server, error) {
	return sasl.NewPlainServer(func(_, user, pass string) error {
		if user != "beluga" || pass != "mail-pw" {
			return errors.New("bad credentials")
		}
		s.user = user
		return nil
	}), nil
}
func (s *mailSession) Mail(from string, _ *smtp.MailOptions) error {
	if s.user == "" {
		return smtp.ErrAuthRequired
	}
	s.msg.from = from
	return nil
}
func (s *mailSession) Rcpt(to string, _ *smtp.RcptOptions) error {
	s.msg.to = append(s.msg.to, to)
	return nil
}
func (s *mailSession) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	_, s.msg.tls = s.conn.TLSConnectionState()
	s.msg.data, s.msg.user = string(b), s.user
	s.mb.mu.Lock()
	s.mb.msgs = append(s.mb.msgs, s.msg)
	s.mb.mu.Unlock()
	select {
	case s.mb.got <- struct{}{}:
	default:
	}
	return nil
}
func (s *mailSession) Reset()        { s.msg = mailMsg{} }
func (s *mailSession) Logout() error { return nil }

func startMailbox(t *testing.T) *mailbox {
	t.Helper()
	ca, err := testcert.NewCA("mail-ca")
	if err != nil {
		t.Fatal(err)
	}
	kp, err := ca.KeyPair("mail", "127.0.0.1", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	mb := &mailbox{got: make(chan struct{}, 16)}
	mb.srv = smtp.NewServer(smtp.BackendFunc(func(c *smtp.Conn) (smtp.Session, error) {
		return &mailSession{mb: mb, conn: c}, nil
	}))
	mb.srv.Domain = "localhost"
	mb.srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{kp}}
	mb.srv.ReadTimeout, mb.srv.WriteTimeout = 10*time.Second, 10*time.Second
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mb.addr = ln.Addr().String()
	done := make(chan struct{})
	go func() { defer close(done); _ = mb.srv.Serve(ln) }()
	t.Cleanup(func() { mb.srv.Close(); <-done })
	return mb
}

// A failed run sends one email through an SMTP server with STARTTLS and
// auth; its history says sent.
func TestFailureAlertByEmail(t *testing.T) {
	mb := startMailbox(t)
	e := start(t, "")
	host, port, _ := net.SplitHostPort(mb.addr)
	e.do("PUT", "/api/v1/alert-channels/ops-mail", fmt.Sprintf(`{"kind":"email","host":%q,"port":%s,"tls":"starttls",`+
		`"insecure_skip_verify":true,"username":"beluga","secret":"mail-pw","from":"Beluga <beluga@example.com>","to":["ops@example.com"]}`,
		host, port), http.StatusCreated, nil)
	var ch map[string]any
	e.do("GET", "/api/v1/alert-channels/ops-mail", "", http.StatusOK, &ch)
	if ch["secret_set"] != true || ch["secret"] != nil {
		t.Fatalf("channel shows: %v", ch)
	}
	e.apply("name: breaks\nalerts: {on: [failure], channels: [ops-mail]}\ntasks:\n  - {name: a, command: \"exit 3\"}\n")
	id := e.run("breaks", nil)
	if iv := e.wait(id, time.Minute); iv.State != "failed" {
		t.Fatalf("run %s", iv.State)
	}
	wait.Signal(t, 60*time.Second, "the alert email", mb.got)
	mb.mu.Lock()
	m := mb.msgs[0]
	mb.mu.Unlock()
	if !m.tls || m.user != "beluga" || m.from != "beluga@example.com" || len(m.to) != 1 || m.to[0] != "ops@example.com" ||
		!strings.Contains(m.data, "Subject: [beluga] failure: demo/breaks #"+fmt.Sprint(id)) || !strings.Contains(m.data, "failed") {
		t.Fatalf("mail: %+v", m)
	}
	var hist struct {
		Items []struct {
			Kind, State, Channel string
			InstanceID           int64 `json:"instance_id"`
			Attempts             int
		} `json:"items"`
	}
	wait.Until(t, 30*time.Second, "alert recorded as sent", func() bool {
		e.do("GET", fmt.Sprintf("/api/v1/alerts?instance=%d", id), "", http.StatusOK, &hist)
		return len(hist.Items) == 1 && hist.Items[0].State == "sent"
	})
	if h := hist.Items[0]; h.Kind != "failure" || h.Channel != "ops-mail" || h.Attempts != 1 {
		t.Fatalf("history: %+v", h)
	}
}

// A webhook channel in Slack format is retried after a 500; the test
// endpoint sends through a script channel on this host.
func TestAlertChannelsRetryAndTest(t *testing.T) {
	var mu sync.Mutex
	var bodies []map[string]string
	calls := 0
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 1 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		var b map[string]string
		_ = json.NewDecoder(r.Body).Decode(&b)
		bodies = append(bodies, b)
	}))
	defer recv.Close()
	e := start(t, "")
	e.do("PUT", "/api/v1/alert-channels/chat", fmt.Sprintf(`{"kind":"webhook","url":%q,"format":"slack"}`, recv.URL), http.StatusCreated, nil)
	e.apply("name: fine\nalerts: {on: [success], channels: [chat]}\ntasks:\n  - {name: a, command: \"true\"}\n")
	id := e.run("fine", nil)
	e.wait(id, time.Minute)
	var hist struct {
		Items []struct {
			State     string
			Attempts  int
			LastError string `json:"last_error"`
		} `json:"items"`
	}
	wait.Until(t, 60*time.Second, "success alert sent after a retry", func() bool {
		e.do("GET", fmt.Sprintf("/api/v1/alerts?instance=%d", id), "", http.StatusOK, &hist)
		return len(hist.Items) == 1 && hist.Items[0].State == "sent"
	})
	if h := hist.Items[0]; h.Attempts != 2 || !strings.Contains(h.LastError, "500") {
		t.Fatalf("history: %+v", h)
	}
	mu.Lock()
	if len(bodies) != 1 || !strings.Contains(bodies[0]["text"], "demo/fine") || !strings.Contains(bodies[0]["text"], "succeeded") {
		t.Fatalf("slack bodies: %v", bodies)
	}
	mu.Unlock()

	out := filepath.Join(e.dir, "alert.json")
	e.do("PUT", "/api/v1/alert-channels/local", fmt.Sprintf(`{"kind":"script","command":"cat > %s; echo $BELUGA_ALERT_KIND >> %s"}`, out, out),
		http.StatusCreated, nil)
	var res struct{ State, Kind string }
	e.do("POST", "/api/v1/alert-channels/local/test", "", http.StatusOK, &res)
	if res.State != "sent" || res.Kind != "test" {
		t.Fatalf("test send: %+v", res)
	}
	b, err := os.ReadFile(out)
	if err != nil || !strings.Contains(string(b), `"kind":"test"`) || !strings.HasSuffix(string(b), "test\n") {
		t.Fatalf("script got %q (%v)", b, err)
	}
	e.do("POST", "/api/v1/alert-channels/nope/test", "", http.StatusNotFound, nil)
}

// A run that has not succeeded by its deadline alerts at the deadline,
// while it is still running.
func TestDeadlineAlertFiresOnTime(t *testing.T) {
	got := make(chan time.Time, 4)
	var body map[string]any
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewDecoder(r.Body).Decode(&body)
		got <- time.Now()
	}))
	defer recv.Close()
	e := start(t, "")
	e.do("PUT", "/api/v1/alert-channels/hook", fmt.Sprintf(`{"kind":"webhook","url":%q}`, recv.URL), http.StatusCreated, nil)
	gate := filepath.Join(e.dir, "gate")
	e.apply(fmt.Sprintf("name: late\ndeadline: 3s\nalerts: {on: [failure], channels: [hook]}\ntasks:\n"+
		"  - {name: a, command: \"while [ ! -f %s ]; do sleep 0.05; done\"}\n", gate))
	id := e.run("late", nil)
	var iv struct {
		State     string    `json:"state"`
		CreatedAt time.Time `json:"created_at"`
	}
	e.do("GET", fmt.Sprintf("/api/v1/instances/%d", id), "", http.StatusOK, &iv)
	deadline := iv.CreatedAt.Add(3 * time.Second)
	var at time.Time
	at = wait.Signal(t, 60*time.Second, "the deadline alert", got)
	e.do("GET", fmt.Sprintf("/api/v1/instances/%d", id), "", http.StatusOK, &iv)
	if iv.State != "running" {
		t.Fatalf("the run is %s: the alert must come while it runs", iv.State)
	}
	if late := at.Sub(deadline); late < 0 || late > time.Second {
		t.Fatalf("alert at %v, deadline %v: %v off", at, deadline, late)
	}
	if body["kind"] != "deadline" || body["instance_id"] != float64(id) {
		t.Fatalf("alert body: %v", body)
	}
	if err := os.WriteFile(gate, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	e.wait(id, time.Minute)
}

func TestAlertRequestsRefused(t *testing.T) {
	e := start(t, "")
	e.apply("name: ok\ntasks: [{name: a, command: \"true\"}]\n")
	for _, c := range []struct{ method, path, body string }{
		{"PUT", "/api/v1/alert-channels/c1", `{"kind":"pager"}`},
		{"PUT", "/api/v1/alert-channels/c1", `{"kind":"webhook","url":"nope"}`},
		{"PUT", "/api/v1/alert-channels/c1", `{"kind":"webhook","url":"http://x/","format":"xml"}`},
		{"PUT", "/api/v1/alert-channels/c1", `{"kind":"email","host":"h","from":"not an address","to":["a@b.c"]}`},
		{"PUT", "/api/v1/alert-channels/c1", `{"kind":"email","host":"h","from":"a@b.c","to":[]}`},
		{"PUT", "/api/v1/alert-channels/c1", `{"kind":"email","host":"h","from":"a@b.c","to":["a@b.c"],"tls":"maybe"}`},
		{"PUT", "/api/v1/alert-channels/c1", `{"kind":"script","command":"  "}`},
		{"PUT", "/api/v1/alert-channels/c1", `{"kind":"script","command":"true","extra":1}`},
		{"PUT", "/api/v1/projects/demo/workflows/w", "name: w\nalerts: {on: [failure], channels: [missing]}\ntasks: [{name: a, command: \"true\"}]\n"},
		{"PUT", "/api/v1/projects/demo/workflows/w", "name: w\ndeadline: 30:00\ntasks: [{name: a, command: \"true\"}]\n"},
		{"GET", "/api/v1/alerts?instance=abc", ""},
		{"PUT", "/api/v1/projects/demo/workflows/ok/schedule", `{"cron":"@daily","alerts":{"on":["failure"],"channels":["missing"]}}`},
		{"PUT", "/api/v1/projects/demo/workflows/ok/schedule", `{"cron":"@daily","alerts":{"on":["sometimes"],"channels":["c"]}}`},
		{"PUT", "/api/v1/projects/demo/workflows/ok/schedule", `{"cron":"@daily","deadline":"7:5"}`},
		{"GET", "/api/v1/alerts?channel=a%20b", ""},
	} {
		req, _ := http.NewRequest(c.method, e.base+c.path, strings.NewReader(c.body))
		ct := "application/json"
		if strings.HasPrefix(c.body, "name:") {
			ct = "application/yaml"
		}
		req.Header.Set("Content-Type", ct)
		resp, err := e.client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s %s %s: %d %s, want 400", c.method, c.path, c.body, resp.StatusCode, b)
		}
	}
	var list struct{ Items []any }
	e.do("GET", "/api/v1/alert-channels", "", http.StatusOK, &list)
	if len(list.Items) != 0 {
		t.Fatalf("a refused body changed something: %v", list.Items)
	}
	e.do("GET", "/api/v1/projects/demo/workflows/w", "", http.StatusNotFound, nil)
	e.do("GET", "/api/v1/projects/demo/workflows/ok/schedule", "", http.StatusNotFound, nil)

	// A schedule's alerts and deadline are stored and answered.
	e.do("PUT", "/api/v1/alert-channels/c", `{"kind":"script","command":"true"}`, http.StatusCreated, nil)
	var sc struct {
		Alerts   struct{ On, Channels []string }
		Deadline string
	}
	e.do("PUT", "/api/v1/projects/demo/workflows/ok/schedule", `{"cron":"@daily","enabled":false,"deadline":"06:00","alerts":{"on":["failure"],"channels":["c"]}}`,
		http.StatusCreated, &sc)
	e.do("GET", "/api/v1/projects/demo/workflows/ok/schedule", "", http.StatusOK, &sc)
	if sc.Deadline != "06:00" || len(sc.Alerts.Channels) != 1 || sc.Alerts.On[0] != "failure" {
		t.Fatalf("schedule overrides: %+v", sc)
	}
}

// A task past its timeout with the warn strategy, and the retry of a
// failed task, alert through the workflow's channels once each.
func TestTimeoutAndRetryAlerts(t *testing.T) {
	e := start(t, "")
	log := filepath.Join(e.dir, "alerts.log")
	e.do("PUT", "/api/v1/alert-channels/local", fmt.Sprintf(`{"kind":"script","command":"echo $BELUGA_ALERT_KIND >> %s"}`, log),
		http.StatusCreated, nil)
	flag := filepath.Join(e.dir, "second")
	e.apply(fmt.Sprintf("name: slow\nalerts: {on: [timeout, retry], channels: [local]}\ntasks:\n"+
		"  - {name: a, command: \"sleep 2\", timeout: 1s, timeout_strategy: warn}\n"+
		"  - {name: b, command: \"[ -f %s ] || { touch %s; exit 1; }\", retries: 1, depends_on: [a]}\n", flag, flag))
	id := e.run("slow", nil)
	if iv := e.wait(id, time.Minute); iv.State != "succeeded" {
		t.Fatalf("run %s", iv.State)
	}
	var hist struct {
		Items []struct{ Kind, State string } `json:"items"`
	}
	wait.Until(t, 30*time.Second, "timeout and retry alerts sent", func() bool {
		e.do("GET", fmt.Sprintf("/api/v1/alerts?instance=%d", id), "", http.StatusOK, &hist)
		sent := 0
		for _, h := range hist.Items {
			if h.State == "sent" {
				sent++
			}
		}
		return sent == 2
	})
	kinds := map[string]int{}
	for _, h := range hist.Items {
		kinds[h.Kind]++
	}
	if len(hist.Items) != 2 || kinds["timeout"] != 1 || kinds["retry"] != 1 {
		t.Fatalf("alerts: %+v", hist.Items)
	}
	b, _ := os.ReadFile(log)
	if got := strings.Fields(string(b)); len(got) != 2 {
		t.Fatalf("script ran for %q", got)
	}
}
