package master

import (
	"context"
	"fmt"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/common/tasktype"
)

// Projects are walls at run time too: a sub_workflow or dependent naming
// another project's workflow is checked, each time it starts or looks,
// against the grants held now by the user who applied the running version
// (its author: store.WorkflowVersionAuthor). The author wrote the reference; who
// pressed run or which schedule fired it does not widen what the version
// reaches. Grants change between apply and run, so the check is repeated.

// wallReason is why author, holding level on project, may not reach
// project's workflow through r; "" when they may. The words are the same
// whether or not the project or workflow exists.
func wallReason(a model.Author, level string, r tasktype.Ref) string {
	need := store.RefLevel(r)
	if model.GrantRank(level) >= model.GrantRank(need) {
		return ""
	}
	what := fmt.Sprintf("%s/%s is another project's: reaching it needs %s on project %q", r.Project, r.Workflow, need, r.Project)
	if a.Name == model.AuthorUnknown {
		return what + "; this workflow version was applied before authors were recorded: apply it again"
	}
	return fmt.Sprintf("%s; %q, who applied this workflow version, has %s", what, a.Name, orNone(level))
}

func orNone(level string) string {
	if level == "" {
		return "none"
	}
	return level
}

// wall checks r (its Project filled in) for a master task of a run of
// version defID in project own: the reason it may not run, "" when it may.
// Within own it is "".
func (l *logicTasks) wall(ctx context.Context, own string, defID int64, r tasktype.Ref) (string, error) {
	if r.Project == own {
		return "", nil
	}
	a, err := l.store.WorkflowVersionAuthor(ctx, defID)
	if err != nil {
		return "", err
	}
	level, err := l.store.GrantAuthorLevel(ctx, a, r.Project)
	if err != nil {
		return "", err
	}
	return wallReason(a, level, r), nil
}

// taskGroupUsable fails an attempt of this run that names task group name
// when the run's version may not take its slots (store.TaskGroupUsable:
// its author's rights now). The refusal reads the same whether it exists.
func (r *runner) taskGroupUsable(name string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, err := r.env.runnerStore().WorkflowVersionAuthor(ctx, r.inst.DefinitionID)
	if err != nil {
		return err
	}
	if ok, err := r.env.runnerStore().TaskGroupUsable(ctx, a, name, r.inst.Project); err != nil {
		return err
	} else if !ok {
		return fmt.Errorf("task group %q is not granted to project %q, and %q, who applied this workflow version, is not an admin", name, r.inst.Project, a.Name)
	}
	return nil
}

// codeAllowed refuses a task of a type that runs a program (shell, python)
// when its tasks would run as the server's OS user (a standalone that is
// not root), the version's author is not an admin and setting
// tasks.allow_unsandboxed_code is 0: the apply was refused for the same
// reason, but the setting or the author's role may have changed since, and
// schedules and reruns start versions on their own. In a cluster the
// workers say at registration whether their tasks run as themselves
// (registry.Node.TasksRunAsServer): such a task may go only to a worker
// that isolates it (isolated), and fails here when its group has live
// workers and none of them does.
func (r *runner) codeAllowed(def *tasktype.Def, group string) (isolated bool, err error) {
	if def.Argv == nil || r.def.byAdmin {
		return false, nil
	}
	asServer, others := r.env.codeRunsAsServer(group)
	if !asServer {
		return false, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	allow, err := r.env.runnerStore().SettingInt(ctx, model.SettingUnsandboxedCode, 0)
	if err != nil {
		return false, err
	}
	if allow == 1 {
		return false, nil
	}
	if others {
		return true, nil
	}
	where := "this server is not root, so tasks run as its own OS user"
	if !r.env.tasksRunAsServer() {
		where = fmt.Sprintf("no worker of group %q runs as root, so its tasks run as the worker's own OS user", group)
	}
	return false, fmt.Errorf("a %s task of a workflow version no admin applied: %s "+
		"with no sandbox, and setting %s is 0 (an admin may set it to 1, or apply the workflow)", def.Name, where, model.SettingUnsandboxedCode)
}
