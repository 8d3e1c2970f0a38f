package cluster

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/remote/frame"
	"github.com/beluga-scheduler/beluga/remote/message"
	"github.com/beluga-scheduler/beluga/testkit/clustertest"
)

// TestWorkflowOverTLS runs a cluster with TLS on every link (the harness
// passes --tls-cert/--tls-key/--tls-ca to every process; the API is
// HTTPS): a diamond runs once per task on two workers, and a plain-text
// Dispatch to a worker and to the master is refused and logged there.
func TestWorkflowOverTLS(t *testing.T) {
	c := clustertest.New(t, clustertest.Options{Masters: 1, Workers: 2, SessionTimeout: sessionTimeout, TLS: true})
	marks := t.TempDir()
	c.Apply(t, diamond(marks, "tls", 100*time.Millisecond))
	id := c.Run(t, "tls")
	if wi := c.WaitFinished(t, id, finishWithin); wi.State != "succeeded" {
		t.Fatalf("instance over TLS ended %s", wi.State)
	}
	c.AssertRanOnce(t, id, marks)

	w, m := c.Workers[0], c.Leader()
	wMark, mMark := w.LogMark(), m.LogMark()
	body, _ := message.Encode(message.Dispatch{TaskInstanceID: 1 << 40, Command: "true", Epoch: 1 << 50})
	for _, addr := range []string{w.Addr, m.Addr} {
		nc, err := net.DialTimeout("tcp", addr, 3*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = nc.Write(frame.Append(nil, frame.Frame{Type: message.TypeDispatch, RequestID: 1, Body: body}))
		_ = nc.SetReadDeadline(time.Now().Add(10 * time.Second))
		buf := make([]byte, 64)
		for err == nil {
			_, err = nc.Read(buf) // a TLS alert, then the close
		}
		nc.Close()
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Fatalf("%s kept a plain-text connection open", addr)
		}
	}
	const refused = "closing connection: TLS handshake failed"
	c.Eventually(t, 10*time.Second, "the refusals in the logs", func() bool {
		return strings.Count(w.LogSince(wMark), refused) == 1 && strings.Count(m.LogSince(mMark), refused) == 1
	})
}
