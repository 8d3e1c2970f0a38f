package master

import (
	"testing"

	"github.com/beluga-scheduler/beluga/common/clusterkey"
	"github.com/beluga-scheduler/beluga/common/secret"
	"github.com/beluga-scheduler/beluga/remote/message"
)

// TestSecretParamsCrossTheLinkSealed (docs/security.md, item 6): a
// dispatch's secret env values leave the master sealed for that attempt;
// the other values and the queued dispatch are untouched, and a sealed
// value copied into another attempt does not open.
func TestSecretParamsCrossTheLinkSealed(t *testing.T) {
	t.Parallel()
	s, _ := clusterkey.New([]byte("link-test-cluster-secret-0000"))
	box, err := secret.NewBox(s)
	if err != nil {
		t.Fatal(err)
	}
	d := message.Dispatch{TaskInstanceID: 7, Attempt: 2, Env: map[string]string{"PW": "hunter2", "DAY": "monday"}, SecretEnv: []string{"PW"}}
	out, err := sealForLink(box, d)
	if err != nil {
		t.Fatal(err)
	}
	if v := out.Env["PW"]; v == "hunter2" || !secret.IsSealed(v) {
		t.Fatalf("secret PW goes on the link as %q, want it sealed", v)
	}
	if out.Env["DAY"] != "monday" || d.Env["PW"] != "hunter2" {
		t.Fatalf("sealed %v from %v: only the secret value of the copy changes", out.Env, d.Env)
	}
	if plain, err := box.OpenFor(out.Env["PW"], secret.LinkContext(7, 2)); err != nil || plain != "hunter2" {
		t.Fatalf("open for the attempt: %q, %v", plain, err)
	}
	if _, err := box.OpenFor(out.Env["PW"], secret.LinkContext(7, 3)); err == nil {
		t.Fatal("the sealed value opened for another attempt")
	}
	if same, _ := sealForLink(nil, d); same.Env["PW"] != "hunter2" {
		t.Fatal("without a cluster secret the dispatch must go as it is")
	}
}
