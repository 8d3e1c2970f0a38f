package master

import (
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/tasktype"
)

// The run-time refusal of a cross-project reference: operate for a child,
// view for a dependency, worded from the reference and the author alone.
func TestWallReason(t *testing.T) {
	t.Parallel()
	child := tasktype.Ref{Project: "crm", Workflow: "export", Child: true}
	dep := tasktype.Ref{Project: "crm", Workflow: "export"}
	bob := model.Author{Name: "bob"}
	for _, c := range []struct {
		a     model.Author
		level string
		r     tasktype.Ref
		want  string // "" may; else a part of the reason
	}{
		{bob, model.GrantOperate, child, ""},
		{bob, model.GrantView, dep, ""},
		{bob, model.GrantView, child, `needs operate on project "crm"; "bob", who applied this workflow version, has view`},
		{bob, "", dep, `needs view on project "crm"; "bob", who applied this workflow version, has none`},
		{model.Author{Name: model.AuthorUnknown}, "", dep, "apply it again"},
	} {
		got := wallReason(c.a, c.level, c.r)
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%+v %q %+v: %q, want %q", c.a, c.level, c.r, got, c.want)
		}
	}
}
