package worker

import (
	"testing"

	"github.com/beluga-scheduler/beluga/common/clusterkey"
	"github.com/beluga-scheduler/beluga/common/secret"
	"github.com/beluga-scheduler/beluga/remote/message"
)

// TestSecretParamsOpenFromTheLink: the worker opens the secret values the
// master sealed for this attempt, and refuses a dispatch whose value was
// sealed for another one (or under another cluster's secret).
func TestSecretParamsOpenFromTheLink(t *testing.T) {
	s, _ := clusterkey.New([]byte("link-test-cluster-secret-0000"))
	box, _ := secret.NewBox(s)
	sealed, err := box.SealFor("hunter2", secret.LinkContext(7, 2))
	if err != nil {
		t.Fatal(err)
	}
	d := message.Dispatch{TaskInstanceID: 7, Attempt: 2, Env: map[string]string{"PW": sealed, "DAY": "monday"}, SecretEnv: []string{"PW"}}
	got, err := openFromLink(box, d)
	if err != nil || got.Env["PW"] != "hunter2" || got.Env["DAY"] != "monday" {
		t.Fatalf("open: %v, %v", got.Env, err)
	}
	d.Attempt = 3
	if _, err := openFromLink(box, d); err == nil {
		t.Fatal("a value sealed for attempt 2 opened for attempt 3")
	}
	other, _ := clusterkey.New([]byte("another-cluster-secret-00000"))
	otherBox, _ := secret.NewBox(other)
	d.Attempt = 2
	if _, err := openFromLink(otherBox, d); err == nil {
		t.Fatal("a value sealed under another cluster secret opened")
	}
}
