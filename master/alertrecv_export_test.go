package master

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"

	"github.com/beluga-scheduler/beluga/common/alert"
	"github.com/beluga-scheduler/beluga/common/model"
)

// channelStore is what AlertReceiver writes its channel to.
type channelStore interface {
	AlertChannelPut(ctx context.Context, ch model.AlertChannel) (model.AlertChannel, bool, error)
}

// AlertReceiver is a webhook alert channel named name in st whose
// receiver keeps what it is sent; got returns it so far.
func AlertReceiver(t *testing.T, st channelStore, name string) (got func() []alert.Message) {
	t.Helper()
	var mu sync.Mutex
	var msgs []alert.Message
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var m alert.Message
		_ = json.NewDecoder(r.Body).Decode(&m)
		mu.Lock()
		msgs = append(msgs, m)
		mu.Unlock()
	}))
	t.Cleanup(recv.Close)
	cfg, _ := json.Marshal(alert.Config{URL: recv.URL})
	if _, _, err := st.AlertChannelPut(context.Background(), model.AlertChannel{Name: name, Kind: alert.Webhook, ConfigJSON: cfg}); err != nil {
		t.Fatal(err)
	}
	return func() []alert.Message {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(msgs)
	}
}
