package standalone_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"

	"github.com/beluga-scheduler/beluga/common/config"
	"github.com/beluga-scheduler/beluga/standalone"
	"github.com/beluga-scheduler/beluga/testkit/testcert"
)

// TestWorkflowOverTLS runs standalone with TLS on every link: the API over
// HTTPS, master and worker over mutual TLS, and the API's log reads from
// the worker too. A workflow runs and its log is read; plain HTTP gets no
// answer from a handler.
func TestWorkflowOverTLS(t *testing.T) {
	ca, err := testcert.NewCA("standalone test CA")
	if err != nil {
		t.Fatal(err)
	}
	c := config.Defaults()
	c.DataDir = t.TempDir()
	c.API.Listen = "127.0.0.1:0"
	c.Worker.Slots = 4
	f, err := ca.WriteFiles(c.DataDir, "node", "127.0.0.1", "localhost")
	if err != nil {
		t.Fatal(err)
	}
	c.TLS = config.TLSConfig{CertFile: f.Cert, KeyFile: f.Key, CAFile: f.CA}
	sa, err := standalone.Start(context.Background(), c, zaptest.NewLogger(t, zaptest.Level(zap.WarnLevel)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sa.Stop)
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool()}}
	t.Cleanup(tr.CloseIdleConnections)
	e := &env{t: t, sa: sa, base: "https://" + sa.API.Addr(), dir: c.DataDir, http: &http.Client{Transport: tr, Timeout: 10 * time.Second}}
	e.do("POST", "/api/v1/projects", `{"name":"demo"}`, http.StatusCreated, nil)
	e.apply(`name: tls
tasks:
  - name: a
    command: echo "over tls"
  - name: b
    command: echo "b after a"
    depends_on: [a]
`)
	iv := e.wait(e.run("tls", nil), 30*time.Second)
	if iv.State != "succeeded" {
		t.Fatalf("instance over TLS: %+v", iv)
	}
	var log string
	e.do("GET", fmt.Sprintf("/api/v1/task-instances/%d/log", iv.task("a").ID), "", http.StatusOK, &log)
	if !strings.Contains(log, "over tls") {
		t.Fatalf("log %q lacks the task's output", log)
	}

	plain := &env{t: t, base: "http://" + sa.API.Addr(), http: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{}}}
	plain.do("GET", "/api/v1/projects", "", http.StatusBadRequest, nil)
}

// Half a TLS setting is refused, naming what is missing.
func TestPartialTLSSettingsRefused(t *testing.T) {
	c := config.Defaults()
	c.DataDir = t.TempDir()
	c.TLS.CertFile = "x.crt"
	_, err := standalone.Start(context.Background(), c, zap.NewNop())
	if err == nil || !strings.Contains(err.Error(), "--tls-key") || !strings.Contains(err.Error(), "--tls-ca") {
		t.Fatalf("start with only a certificate: %v, want an error naming --tls-key and --tls-ca", err)
	}
}
