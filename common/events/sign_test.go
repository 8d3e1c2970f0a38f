package events

import (
	"os"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/internal/leakcheck"
)

func TestMain(m *testing.M) { os.Exit(leakcheck.Run(m)) }

func TestSignVerify(t *testing.T) {
	key, body := []byte("k"), []byte(`{"id":1}`)
	at := time.Unix(1700000000, 0)
	h := Sign(key, at, body)
	if got, err := Verify(key, h, body); err != nil || !got.Equal(at) {
		t.Fatalf("verify own signature: %v %v", got, err)
	}
	for name, c := range map[string]struct {
		key    string
		header string
		body   string
	}{
		"other body":   {"k", h, `{"id":2}`},
		"other key":    {"j", h, string(body)},
		"no timestamp": {"k", "v1=00", string(body)},
		"no mac":       {"k", "t=1", string(body)},
		"other time":   {"k", Sign(key, at.Add(time.Second), body)[:13] + h[13:], string(body)},
	} {
		if _, err := Verify([]byte(c.key), c.header, []byte(c.body)); err == nil {
			t.Errorf("%s: verified", name)
		}
	}
}

func TestHubWakes(t *testing.T) {
	var nilHub *Hub
	nilHub.Published(1)
	if nilHub.Wait() != nil {
		t.Fatal("nil hub waits on a channel")
	}
	h := NewHub()
	w := h.Wait()
	select {
	case <-w:
		t.Fatal("woken before anything was published")
	default:
	}
	h.Published(3)
	<-w
}
