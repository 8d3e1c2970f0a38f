package worker

import (
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/remote"
)

func TestCommandFrom(t *testing.T) {
	leader := remote.Identity{Role: remote.RoleMaster, ID: "m1:1"}
	for _, tc := range []struct {
		name   string
		peer   remote.Identity
		authed bool
		epoch  int64
		addr   string
		want   string
	}{
		{"leader in its epoch", leader, true, 7, "m1:1", ""},
		{"leader, kill (no epoch)", leader, true, 0, "", ""},
		{"unauthenticated", leader, false, 7, "m1:1", "not authenticated"},
		{"a worker", remote.Identity{Role: remote.RoleWorker, ID: "m1:1"}, true, 7, "", "not a master"},
		{"a standby", remote.Identity{Role: remote.RoleMaster, ID: "m2:1"}, true, 7, "", "not the leader"},
		{"huge epoch", leader, true, 1 << 50, "m1:1", "not the leader's epoch"},
		{"reports elsewhere", leader, true, 7, "evil:1", "is not the sender"},
	} {
		got := commandFrom(tc.peer, tc.authed, "m1:1", 7, tc.epoch, tc.addr)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
