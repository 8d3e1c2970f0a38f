package api

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/object"
	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/gitsync"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// gitAuthorDomain is the mail domain of the users' Git author addresses
// (Beluga users have no email): reserved, so never a real mailbox.
const gitAuthorDomain = "users.beluga.invalid"

// maxCommitMessage bounds the message a save gives its write-back commit.
const maxCommitMessage = 4096

// gitEdit is an edit outside Git of workflow name (data nil: its delete)
// in a project bound to a repository, done before the edit is stored:
// nothing in mode "" (or no binding); a 409 naming the repository and the
// file in read_only; in write_back, a commit of the file on the branch as
// the caller, with message, pushed (a remote) or written in place (a local
// repository). A commit that cannot be made refuses the edit (409 when the
// branch moved, 502 when the repository cannot be reached) and the store is
// not written. The commit comes first because it can be refused by others
// (a push elsewhere); the store's own refusals after it (a datasource gone
// meanwhile) leave the commit on the branch, and the next sync refuses it
// the same way, naming the file. path is the file written ("" none).
func (h *handlers) gitEdit(ctx context.Context, project, name string, data []byte, message string) (commit, path string, err error) {
	return h.gitEditKind(ctx, project, store.GitKindWorkflow, name, data, message)
}

// gitEditKind is gitEdit of a file of kind: a workflow's
// (workflows/<name>.yaml) or a schedule's (schedules/<workflow>.yaml).
func (h *handlers) gitEditKind(ctx context.Context, project, kind, name string, data []byte, message string) (commit, path string, err error) {
	b, err := h.Store.GitBindingGet(ctx, project)
	if errors.Is(err, store.ErrNotFound) {
		return "", "", nil
	}
	if err != nil {
		return "", "", storeError(err)
	}
	if b.Mode == model.GitModeFree {
		return "", "", nil
	}
	origin, err := h.Store.GitFileOrigin(ctx, project, kind, name)
	if err != nil {
		return "", "", storeError(err)
	}
	path = gitsync.FilePath(b.Dir, origin, name)
	what := "workflow " + name
	if kind == store.GitKindSchedule {
		path = gitsync.KindFilePath(b.Dir, gitsync.SchedulesDir, origin, name)
		what = "schedule of " + name
	}
	where := b.URL
	if b.Branch != "" {
		where += " (branch " + b.Branch + ")"
	}
	if b.Mode == model.GitModeReadOnly {
		return "", "", conflict("project %q is read-only outside Git: edit %s in %s and push; the next sync applies it", project, path, where)
	}
	if len(message) > maxCommitMessage || strings.ContainsRune(message, 0) {
		return "", "", badRequest("message: at most %d bytes, no NUL", maxCommitMessage)
	}
	if strings.TrimSpace(message) == "" {
		verb := "apply"
		if data == nil {
			verb = "delete"
		}
		message = fmt.Sprintf("beluga - %s %s", verb, what)
	}
	src, err := h.gitSource(b)
	if err != nil {
		return "", "", err
	}
	c := callerOf(ctx)
	fctx, cancel := context.WithTimeout(ctx, gitFetchTimeout)
	defer cancel()
	commit, err = gitsync.Commit(fctx, src, gitsync.Change{Path: path, Data: data, Message: message,
		Author: object.Signature{Name: c.name, Email: c.name + "@" + gitAuthorDomain}})
	if errors.Is(err, gitsync.ErrMoved) {
		return "", "", conflict("the save was not committed to %s, nothing changed: %v; sync the project and save again", where, err)
	}
	if err != nil {
		h.log.Info("git write-back failed", zap.String("project", project), zap.String("kind", kind), zap.String("name", name), zap.Error(err))
		return "", "", &httpError{http.StatusBadGateway, CodeBadGateway, fmt.Sprintf("the save was not committed to %s, nothing changed: %v", where, err)}
	}
	return commit, path, nil
}

// gitScheduleEdit is gitEditKind for a PUT (req) or, req nil, a DELETE of
// the schedule of workflow name: the file is the request as YAML, without
// the fields of one request only (by, version) and with every secret
// param's value written as the mask (the value stays in Beluga).
func (h *handlers) gitScheduleEdit(ctx context.Context, project, name string, req *ScheduleRequest, message string) (commit, path string, err error) {
	var data []byte
	if req != nil {
		f := *req
		f.By, f.Version = "", nil
		f.Params = maps.Clone(req.Params)
		gitsync.MaskParams(f.Params, f.SecretParams)
		if data, err = gitsync.YAMLOf(f); err != nil {
			return "", "", fmt.Errorf("the schedule of %s as a file: %w", name, err)
		}
	}
	return h.gitEditKind(ctx, project, store.GitKindSchedule, name, data, message)
}
