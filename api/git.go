package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/gitsync"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
)

// gitFetchTimeout bounds one sync's fetch of its repository.
const gitFetchTimeout = 2 * time.Minute

// gitSyncsAtOnce bounds the syncs one API server runs at once (each holds
// a commit's files, and a remote's clone, in memory); more wait their turn.
const gitSyncsAtOnce = 2

// maxGitSyncInterval is the longest sync_interval, a week in minutes.
const maxGitSyncInterval = 7 * 24 * 60

// gitHookSealContext binds a project's sealed webhook secret to it.
func gitHookSealContext(project string) string { return "git-hook/" + project }

// gitSSHSealContext binds a project's sealed SSH private key to it.
func gitSSHSealContext(project string) string { return "git-ssh/" + project }

// gitSealContext binds a project's sealed Git password to it.
func gitSealContext(project string) string { return "git/" + project }

// gitURLKind says whether raw is a remote (http, https) or local (file://,
// an absolute path) repository, or why it is neither.
func gitURLKind(raw string) (local bool, err error) {
	if raw == "" {
		return false, errors.New("url is required: an https:// URL, an SSH address (ssh://host/path, git@host:path) or (admins) an absolute path of a repository on this server")
	}
	if strings.ContainsAny(raw, "\x00\r\n") {
		return false, fmt.Errorf("url %q has a control character", raw)
	}
	if filepath.IsAbs(raw) {
		return true, nil
	}
	if gitsync.IsSSH(raw) {
		return false, gitsync.CheckSSHURL(raw)
	}
	u, err := url.Parse(raw)
	if err != nil || u.Scheme == "" {
		return false, fmt.Errorf("url %q is neither a URL, an SSH address nor an absolute path", raw)
	}
	switch u.Scheme {
	case "file":
		if u.Host != "" && u.Host != "localhost" {
			return false, fmt.Errorf("url %q: a file URL names no host", raw)
		}
		return true, nil
	case "http", "https":
		if u.Host == "" {
			return false, fmt.Errorf("url %q has no host", raw)
		}
		if _, set := u.User.Password(); set {
			return false, fmt.Errorf("url %q carries a password: give it as password (stored sealed), never in the URL", u.Redacted())
		}
		return false, nil
	}
	return false, fmt.Errorf("url %q: scheme %s is not supported; use https, ssh or (admins) a local path", raw, u.Scheme)
}

// checkGitBranch refuses a branch name Git would not take (a subset of
// git check-ref-format's rules, enough to keep odd names out).
func checkGitBranch(b string) error {
	if b == "" {
		return nil
	}
	if len(b) > 255 || strings.HasPrefix(b, "-") || strings.HasPrefix(b, "/") || strings.HasSuffix(b, "/") ||
		strings.HasSuffix(b, ".lock") || strings.HasSuffix(b, ".") || strings.Contains(b, "..") ||
		strings.Contains(b, "//") || strings.Contains(b, "@{") || strings.ContainsAny(b, " ~^:?*[\\\x7f") {
		return fmt.Errorf("branch %q is not a valid Git branch name", b)
	}
	for _, r := range b {
		if r < 0x20 {
			return fmt.Errorf("branch %q is not a valid Git branch name", b)
		}
	}
	return nil
}

func (h *handlers) putGitBinding(w http.ResponseWriter, r *http.Request) error {
	project, err := pathName(r, "project")
	if err != nil {
		return err
	}
	var req GitBindingRequest
	if err := decodeJSON(r, &req, false); err != nil {
		return err
	}
	req.URL = strings.TrimSpace(req.URL)
	local, err := gitURLKind(req.URL)
	if err != nil {
		return badRequest("git binding of project %q: %v", project, err)
	}
	if local && !callerOf(r.Context()).admin() {
		return forbidden("git binding of project %q: a local repository (%s) reads this server's disk: only an admin may bind one", project, req.URL)
	}
	if err := checkGitBranch(req.Branch); err != nil {
		return badRequest("git binding of project %q: %v", project, err)
	}
	if err := gitsync.CheckDir(req.Dir); err != nil {
		return badRequest("git binding of project %q: %v", project, err)
	}
	if len(req.User) > 255 || strings.ContainsAny(req.User, "\x00\r\n") {
		return badRequest("git binding of project %q: user is not valid (at most 255 characters, no control characters)", project)
	}
	if req.SyncInterval < 0 || req.SyncInterval > maxGitSyncInterval {
		return badRequest("git binding of project %q: sync_interval %d: give minutes from 0 (never) to %d", project, req.SyncInterval, maxGitSyncInterval)
	}
	switch req.Mode {
	case model.GitModeFree, model.GitModeReadOnly, model.GitModeWriteBack:
	default:
		return badRequest("git binding of project %q: mode %q: give %q, %q or leave it out (edits outside Git allowed)", project, req.Mode, model.GitModeReadOnly, model.GitModeWriteBack)
	}
	ssh := gitsync.IsSSH(req.URL)
	if ssh {
		if req.Password != nil && *req.Password != "" {
			return badRequest("git binding of project %q: an SSH URL authenticates with ssh_key, not a password", project)
		}
		if err := gitsync.CheckKnownHosts(req.KnownHosts); err != nil {
			return badRequest("git binding of project %q: %v", project, err)
		}
		if req.SSHKey != nil && *req.SSHKey == "" {
			return badRequest("git binding of project %q: an SSH URL needs ssh_key (a private key without passphrase)", project)
		}
		if req.SSHKey == nil {
			if old, err := h.Store.GitBindingGet(r.Context(), project); err != nil || old.SSHKeySealed == "" {
				return badRequest("git binding of project %q: an SSH URL needs ssh_key (a private key without passphrase)", project)
			}
		}
	} else if req.SSHKey != nil && *req.SSHKey != "" || req.KnownHosts != "" {
		return badRequest("git binding of project %q: ssh_key and known_hosts are for an SSH URL (ssh://host/path, git@host:path)", project)
	}
	if req.SSHKey != nil && *req.SSHKey != "" {
		if err := gitsync.CheckSSHKey(*req.SSHKey); err != nil {
			return badRequest("git binding of project %q: %v", project, err)
		}
	}
	if len(req.KnownHosts) > 64<<10 {
		return badRequest("git binding of project %q: known_hosts: at most 64 KiB", project)
	}
	if req.NewHookSecret && req.DropHookSecret {
		return badRequest("git binding of project %q: new_hook_secret and drop_hook_secret together", project)
	}
	if missing, err := h.Store.AlertChannelMissing(r.Context(), req.AlertChannels); err != nil {
		return err
	} else if len(missing) > 0 {
		return badRequest("git binding of project %q: alert_channels: no alert channel %q", project, missing[0])
	}
	b := model.GitBinding{Project: project, URL: req.URL, Branch: req.Branch, Dir: strings.Trim(req.Dir, "/"), User: req.User,
		PasswordSealed: store.KeepGitPassword, BoundBy: callerOf(r.Context()).name, SyncInterval: time.Duration(req.SyncInterval) * time.Minute,
		Mode: req.Mode, AlertChannels: req.AlertChannels, HookSecretSealed: store.KeepGitPassword,
		SSHKeySealed: store.KeepGitPassword, KnownHosts: strings.TrimSpace(req.KnownHosts)}
	if !ssh {
		b.SSHKeySealed = "" // an https binding keeps no key
	}
	if req.SSHKey != nil && *req.SSHKey != "" {
		if h.Secrets == nil {
			return noKey("store a Git SSH key")
		}
		if b.SSHKeySealed, err = h.Secrets.SealFor(*req.SSHKey, gitSSHSealContext(project)); err != nil {
			return err
		}
	}
	hook := ""
	switch {
	case req.DropHookSecret:
		b.HookSecretSealed = ""
	case req.NewHookSecret:
		if h.Secrets == nil {
			return noKey("store a Git webhook secret")
		}
		hook = newHookSecret()
		if b.HookSecretSealed, err = h.Secrets.SealFor(hook, gitHookSealContext(project)); err != nil {
			return err
		}
	}
	if req.Password != nil {
		b.PasswordSealed = ""
		if *req.Password != "" {
			if h.Secrets == nil {
				return noKey("store a Git password")
			}
			if b.PasswordSealed, err = h.Secrets.SealFor(*req.Password, gitSealContext(project)); err != nil {
				return err
			}
		}
	}
	out, created, err := h.Store.GitBindingPut(r.Context(), b)
	if err != nil {
		return storeError(err)
	}
	status := http.StatusOK
	if created {
		status = http.StatusCreated
	}
	res := fromGitBinding(out)
	res.HookSecret = hook
	writeJSON(w, status, res)
	return nil
}

func (h *handlers) getGitBinding(w http.ResponseWriter, r *http.Request) error {
	project, err := pathName(r, "project")
	if err != nil {
		return err
	}
	b, err := h.Store.GitBindingGet(r.Context(), project)
	if err != nil {
		return storeError(err)
	}
	writeJSON(w, http.StatusOK, fromGitBinding(b))
	return nil
}

func (h *handlers) deleteGitBinding(w http.ResponseWriter, r *http.Request) error {
	project, err := pathName(r, "project")
	if err != nil {
		return err
	}
	if err := h.Store.GitBindingDelete(r.Context(), project); err != nil {
		return storeError(err)
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// syncGit applies the head of the project's branch as the caller
// (gitSync).
func (h *handlers) syncGit(w http.ResponseWriter, r *http.Request) error {
	project, err := pathName(r, "project")
	if err != nil {
		return err
	}
	out, err := h.gitSync(r.Context(), project)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// gitSync applies the head of the project's branch as the caller of ctx:
// every workflow file through an apply's checks, then all in one
// transaction, with the workflows whose file is gone deleted. A refused
// commit changes nothing; the answer (400), the binding's state and a
// git_sync event name the file and the reason.
func (h *handlers) gitSync(ctx context.Context, project string) (GitSyncResult, error) {
	b, err := h.Store.GitBindingGet(ctx, project)
	if errors.Is(err, store.ErrNotFound) {
		if _, perr := h.Store.ProjectGet(ctx, project); perr != nil {
			return GitSyncResult{}, storeError(perr)
		}
		return GitSyncResult{}, badRequest("project %q is not bound to a Git repository: bind one first (PUT /api/v1/projects/%s/git, beluga git set)", project, project)
	}
	if err != nil {
		return GitSyncResult{}, storeError(err)
	}
	if err := h.gitSyncs.Acquire(ctx, 1); err != nil {
		return GitSyncResult{}, fmt.Errorf("wait for a git sync slot: %w", err)
	}
	defer h.gitSyncs.Release(1)
	src, err := h.gitSource(b)
	if err != nil {
		return GitSyncResult{}, err
	}
	fctx, cancel := context.WithTimeout(ctx, gitFetchTimeout)
	snap, err := gitsync.Fetch(fctx, src)
	cancel()
	if err != nil {
		var fe *gitsync.FileError
		if errors.As(err, &fe) {
			return GitSyncResult{}, h.refuseSync(ctx, project, snap.Commit, fe.File, fe.Reason)
		}
		if rerr := h.Store.GitSyncRefused(ctx, project, "", "", err.Error()); rerr != nil {
			return GitSyncResult{}, rerr
		}
		h.log.Info("git sync could not fetch", zap.String("project", project), zap.Error(err))
		return GitSyncResult{}, &httpError{http.StatusBadGateway, CodeBadGateway, fmt.Sprintf("git sync of project %q: %v; nothing changed", project, err)}
	}
	files := make([]string, 0, len(snap.Files))
	wfs := make([]*spec.Workflow, 0, len(snap.Files))
	seen := map[string]string{}
	for _, f := range snap.Files {
		if other, dup := seen[f.Workflow]; dup {
			return GitSyncResult{}, h.refuseSync(ctx, project, snap.Commit, f.Path, fmt.Sprintf("workflow %q is also in %s: one file a workflow", f.Workflow, other))
		}
		seen[f.Workflow] = f.Path
		if !validName(f.Workflow) {
			return GitSyncResult{}, h.refuseSync(ctx, project, snap.Commit, f.Path, fmt.Sprintf("the file name gives workflow %q, which is not valid: %s", f.Workflow, nameRule))
		}
		wf, err := h.checkApply(ctx, project, f.Workflow, "the file name", f.Data)
		if err != nil {
			var he *httpError
			if !errors.As(err, &he) {
				return GitSyncResult{}, err
			}
			return GitSyncResult{}, h.refuseSync(ctx, project, snap.Commit, f.Path, he.msg)
		}
		if bad := gitsync.SecretsInClear(wf); len(bad) > 0 {
			return GitSyncResult{}, h.refuseSync(ctx, project, snap.Commit, f.Path, strings.Join(bad, "; "))
		}
		files, wfs = append(files, f.Path), append(wfs, wf)
	}
	scheds, err := h.gitSchedules(ctx, project, snap, seen)
	if err != nil {
		return GitSyncResult{}, err
	}
	if err := h.gitReferences(ctx, project, snap); err != nil {
		return GitSyncResult{}, err
	}
	applied, err := h.Store.GitSyncApplyCommit(ctx, project, callerOf(ctx).name,
		store.GitCommit{Commit: snap.Commit, Files: files, Workflows: wfs, Schedules: scheds})
	if err != nil {
		var fe *store.GitFileError
		if errors.As(err, &fe) {
			var he *httpError
			if errors.As(applyStoreError(fe.Err), &he) {
				return GitSyncResult{}, h.refuseSync(ctx, project, snap.Commit, fe.File, he.msg)
			}
		}
		return GitSyncResult{}, storeError(err)
	}
	if len(scheds) > 0 && h.Notify != nil {
		h.Notify() // the master plans the new fires sooner
	}
	out := GitSyncResult{Project: project, Commit: snap.Commit, Workflows: []GitSyncedEntry{}}
	for _, a := range applied {
		e := GitSyncedEntry{File: a.File, Workflow: a.Definition.Name, Version: a.Definition.Version, Created: a.Created, Deleted: a.Deleted}
		if a.Kind == store.GitKindSchedule {
			e.Version = 0
			out.Schedules = append(out.Schedules, e)
			continue
		}
		out.Workflows = append(out.Workflows, e)
	}
	for _, f := range snap.Datasources {
		out.Datasources = append(out.Datasources, GitSyncedEntry{File: f.Path, Name: f.Workflow})
	}
	for _, f := range snap.TaskGroups {
		out.TaskGroups = append(out.TaskGroups, GitSyncedEntry{File: f.Path, Name: f.Workflow})
	}
	h.log.Info("git sync applied", zap.String("project", project), zap.String("commit", snap.Commit), zap.Int("workflows", len(applied)))
	return out, nil
}

// gitSource is where b's syncs read, its password opened.
func (h *handlers) gitSource(b model.GitBinding) (gitsync.Source, error) {
	src := gitsync.Source{URL: b.URL, Branch: b.Branch, Dir: b.Dir, User: b.User, KnownHosts: b.KnownHosts}
	if b.SSHKeySealed != "" {
		if h.Secrets == nil {
			return src, noKey("open the project's Git SSH key")
		}
		var err error
		if src.SSHKey, err = h.Secrets.OpenFor(b.SSHKeySealed, gitSSHSealContext(b.Project)); err != nil {
			return src, fmt.Errorf("open the Git SSH key of project %q: %w", b.Project, err)
		}
	}
	if b.PasswordSealed == "" {
		return src, nil
	}
	if h.Secrets == nil {
		return src, noKey("open the project's Git password")
	}
	var err error
	if src.Password, err = h.Secrets.OpenFor(b.PasswordSealed, gitSealContext(b.Project)); err != nil {
		return src, fmt.Errorf("open the Git password of project %q: %w", b.Project, err)
	}
	return src, nil
}

// refuseSync records a refused commit and answers 400 naming the file.
func (h *handlers) refuseSync(ctx context.Context, project, commit, file, reason string) error {
	if err := h.Store.GitSyncRefused(ctx, project, commit, file, reason); err != nil {
		return err
	}
	h.log.Info("git sync refused", zap.String("project", project), zap.String("commit", commit),
		zap.String("file", file), zap.String("reason", reason))
	return badRequest("git sync of project %q refused commit %s, nothing changed: %s: %s", project, shortCommit(commit), file, reason)
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	if c == "" {
		return "(none)"
	}
	return c
}

// gitSchedules checks a commit's schedule files, each as a PUT of the
// schedule of the workflow its file names (in the commit, or stored), as
// the caller; the first bad one refuses the commit, naming it.
// inCommit holds the commit's workflows, by name.
func (h *handlers) gitSchedules(ctx context.Context, project string, snap gitsync.Snapshot, inCommit map[string]string) ([]store.GitSchedule, error) {
	out := make([]store.GitSchedule, 0, len(snap.Schedules))
	for _, f := range snap.Schedules {
		refuse := func(format string, args ...any) error {
			return h.refuseSync(ctx, project, snap.Commit, f.Path, fmt.Sprintf(format, args...))
		}
		if !validName(f.Workflow) {
			return nil, refuse("the file name gives workflow %q, which is not valid: %s", f.Workflow, nameRule)
		}
		raw, err := gitsync.ToJSON(f.Data)
		if err != nil {
			return nil, refuse("%v", err)
		}
		var req ScheduleRequest
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&req); err != nil {
			return nil, refuse("not a schedule: %v", err)
		}
		if req.By != "" || req.Version != nil {
			return nil, refuse("by and version are a request's, not a schedule file's: leave them out (a sync records its user)")
		}
		if bad := gitsync.ParamsInClear("schedule", req.Params, req.SecretParams); len(bad) > 0 {
			return nil, refuse("%s", strings.Join(bad, "; "))
		}
		_, in := inCommit[f.Workflow]
		sc, _, err := h.scheduleOf(ctx, project, f.Workflow, callerOf(ctx).name, req, in)
		if err != nil {
			var he *httpError
			if !errors.As(err, &he) {
				return nil, err
			}
			return nil, refuse("%s", he.msg)
		}
		out = append(out, store.GitSchedule{File: f.Path, Schedule: sc})
	}
	return out, nil
}

// gitReferences checks a commit's datasource and task group files: each
// names one Beluga has (an admin makes it; a datasource's password stays
// in Beluga), usable by the project, whose facts match what the file
// gives. The first that does not refuses the commit, naming it.
func (h *handlers) gitReferences(ctx context.Context, project string, snap gitsync.Snapshot) error {
	admin := callerOf(ctx).admin()
	for _, f := range snap.Datasources {
		refuse := func(format string, args ...any) error {
			return h.refuseSync(ctx, project, snap.Commit, f.Path, fmt.Sprintf(format, args...))
		}
		ref, err := gitsync.ParseDatasource(f.Data)
		if err != nil {
			return refuse("%v", err)
		}
		d, err := h.Store.DatasourceGet(ctx, f.Workflow)
		if errors.Is(err, store.ErrNotFound) {
			return refuse("datasource %q does not exist in Beluga: an admin creates it (beluga datasource set), with its password", f.Workflow)
		}
		if err != nil {
			return err
		}
		if !admin {
			ok, err := h.Store.DatasourceGranted(ctx, f.Workflow, project)
			if err != nil {
				return err
			}
			if !ok {
				return refuse("datasource %q is not granted to project %q: an admin grants it", f.Workflow, project)
			}
		}
		if bad := datasourceMismatch(ref, d); len(bad) > 0 {
			return refuse("datasource %q in Beluga differs: %s; change the file, or an admin the datasource", f.Workflow, strings.Join(bad, "; "))
		}
	}
	for _, f := range snap.TaskGroups {
		refuse := func(format string, args ...any) error {
			return h.refuseSync(ctx, project, snap.Commit, f.Path, fmt.Sprintf(format, args...))
		}
		ref, err := gitsync.ParseTaskGroup(f.Data)
		if err != nil {
			return refuse("%v", err)
		}
		g, err := h.Store.TaskGroupGet(ctx, f.Workflow)
		if errors.Is(err, store.ErrNotFound) {
			return refuse("task group %q does not exist in Beluga: an admin creates it (beluga task-group create)", f.Workflow)
		}
		if err != nil {
			return err
		}
		if !admin {
			ok, err := h.Store.TaskGroupGranted(ctx, f.Workflow, project)
			if err != nil {
				return err
			}
			if !ok {
				return refuse("task group %q is not granted to project %q: an admin grants it", f.Workflow, project)
			}
		}
		if ref.Capacity != 0 && ref.Capacity != g.Capacity {
			return refuse("task group %q in Beluga differs: capacity is %d, the file says %d; change the file, or an admin the group", f.Workflow, g.Capacity, ref.Capacity)
		}
	}
	return nil
}

// datasourceMismatch lists the facts of ref (those it gives) that d does
// not have.
func datasourceMismatch(ref gitsync.DatasourceRef, d model.Datasource) []string {
	var bad []string
	str := func(field, file, have string) {
		if file != "" && file != have {
			bad = append(bad, fmt.Sprintf("%s is %q, the file says %q", field, have, file))
		}
	}
	str("type", ref.Type, d.Type)
	str("host", ref.Host, d.Host)
	str("database", ref.Database, d.Database)
	str("user", ref.User, d.User)
	if ref.Port != 0 && ref.Port != d.Port {
		bad = append(bad, fmt.Sprintf("port is %d, the file says %d", d.Port, ref.Port))
	}
	for _, k := range slices.Sorted(maps.Keys(ref.Params)) {
		str("params "+k, ref.Params[k], d.Params[k])
	}
	return bad
}
