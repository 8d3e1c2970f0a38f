package api

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/common/tasktype"
)

// checkWalls refuses (403) a spec applied in project own by a caller who
// is no admin, when its tasks name another project's workflow without the
// caller's grant there (operate for a sub_workflow, view for a dependent:
// store.RefLevel), or a datasource or task group not granted to own. It
// runs before the names are looked up, so the answer is the same whether
// the project, workflow, datasource or task group exists or not.
func (h *handlers) checkWalls(ctx context.Context, own string, wf *spec.Workflow) error {
	c := callerOf(ctx)
	if c == nil || c.admin() {
		return nil
	}
	var bad []string
	for i := range wf.Tasks {
		t := &wf.Tasks[i]
		if t.TaskGroup != "" {
			ok, err := h.Store.TaskGroupGranted(ctx, t.TaskGroup, own)
			if err != nil {
				return err
			}
			if !ok {
				bad = append(bad, fmt.Sprintf("task %q: task group %q is not granted to project %q (an admin grants task groups to projects)", t.Name, t.TaskGroup, own))
			}
		}
		def, ok := tasktype.Lookup(t.Type)
		if !ok || (def.Refs == nil && def.Datasource == nil) {
			continue
		}
		s, problems := def.Decode(t.TypeFields())
		if len(problems) > 0 {
			continue // the spec's own check has reported them
		}
		if def.Datasource != nil {
			if n := def.Datasource(s); n != "" {
				ok, err := h.Store.DatasourceGranted(ctx, n, own)
				if err != nil {
					return err
				}
				if !ok {
					bad = append(bad, fmt.Sprintf("task %q: datasource %q is not granted to project %q (an admin grants datasources to projects)", t.Name, n, own))
				}
			}
		}
		if def.Refs == nil {
			continue
		}
		for _, r := range def.Refs(s) {
			if r.Project == "" || r.Project == own {
				continue
			}
			need := store.RefLevel(r)
			l, err := h.levelByName(ctx, c, r.Project)
			if err != nil {
				return err
			}
			if model.GrantRank(l) < model.GrantRank(need) {
				bad = append(bad, fmt.Sprintf("task %q: %s %s/%s needs %s on project %q; user %q has %s",
					t.Name, t.Type, r.Project, r.Workflow, need, r.Project, c.name, orNone(l)))
			}
		}
	}
	if len(bad) > 0 {
		return forbidden("%s", strings.Join(bad, "; "))
	}
	return nil
}

// levelByName is the caller's grant on the project named name; "" for a
// project that does not exist, as for one without a grant.
func (h *handlers) levelByName(ctx context.Context, c *caller, name string) (string, error) {
	p, err := h.Store.ProjectGet(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read project %q: %w", name, err)
	}
	return h.level(ctx, c, p.ID)
}

func orNone(level string) string {
	if level == "" {
		return "none"
	}
	return level
}
