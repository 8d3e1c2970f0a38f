package api

import (
	"context"
	"fmt"
	"net/http"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/tasktype"
)

// settingUnsandboxedCode is the admin's answer to "may non-admins run code
// on a server that cannot keep tasks from itself" (docs/security.md, item 1):
// 0 (the default) refuses their shell and python tasks, 1 allows them.
const settingUnsandboxedCode = model.SettingUnsandboxedCode

// codeGate refuses, with a 403 naming the setting, a non-admin's apply or
// start of a workflow with a task that runs code the spec wrote (a type with
// a process: shell, python) while this server's tasks run as its own OS
// user (it is not root: no user switch, no sandbox) and the setting says
// deny. Elsewhere it costs nothing: no setting is read.
func (h *handlers) codeGate(ctx context.Context, wf *spec.Workflow) error {
	if !h.codeGateShut(ctx) {
		return nil
	}
	return refuseCode(wf)
}

// codeGateShut: tasks here run as the server's user, the caller is not an
// admin and the setting denies.
func (h *handlers) codeGateShut(ctx context.Context) bool {
	if h.Isolation == nil || !h.Isolation().RunsAsServer {
		return false
	}
	if c := callerOf(ctx); c == nil || c.admin() {
		return false
	}
	return h.settings.get(ctx, settingUnsandboxedCode) == 0
}

func refuseCode(wf *spec.Workflow) error {
	for _, t := range wf.Tasks {
		if RunsCode(t.Type) {
			return forbidden("task %q is a %s task: %s", t.Name, t.Type, unsandboxedCodeRefusal)
		}
	}
	return nil
}

// unsandboxedCodeRefusal says why and what an admin may do about it.
var unsandboxedCodeRefusal = fmt.Sprintf("this server is not root, so its tasks run as its own OS user with no sandbox "+
	"and could read its data dir, keys and process; only admins may apply or start code-executing tasks (shell, python) "+
	"while setting %s is 0 (an admin may set it to 1 to allow them)", settingUnsandboxedCode)

// RunsCode says whether tasks of type name run a program the spec wrote:
// the types that start a process (tasktype.Def.Argv).
func RunsCode(name string) bool {
	d, ok := tasktype.Lookup(name)
	return ok && d.Argv != nil
}

// codeGateStored is codeGate for a stored workflow version (0: the latest)
// that a non-admin starts: a run, a backfill or a schedule. The version is
// read only when the gate is shut.
func (h *handlers) codeGateStored(r *http.Request, project, name string, version int) error {
	return h.codeGateStoredCtx(r.Context(), project, name, version)
}

// codeGateStoredCtx is codeGateStored outside a request (a Git sync).
func (h *handlers) codeGateStoredCtx(ctx context.Context, project, name string, version int) error {
	if !h.codeGateShut(ctx) {
		return nil
	}
	def, err := h.Store.WorkflowGet(ctx, project, name, version)
	if err != nil {
		return storeError(err)
	}
	wf, err := spec.ParseStored(def.SpecJSON)
	if err != nil {
		return fmt.Errorf("stored spec of %s version %d: %w", name, def.Version, err)
	}
	return refuseCode(wf)
}
