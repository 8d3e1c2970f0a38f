package api

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// maxHookBody bounds a webhook's body: it is only hashed (a push event of
// a large push is a few MiB at most).
const maxHookBody = 8 << 20

func newHookSecret() string { return "bgh_" + rand.Text() }

// hookRefusal is the one answer to a webhook call that does not prove the
// secret, whatever the reason (no such project, no binding, no secret, a
// wrong one), so that it tells an outsider nothing.
var hookRefusal = unauthorized("the webhook call is not authenticated: sign the body with the project's hook secret " +
	"(X-Hub-Signature-256: sha256=<hex HMAC-SHA256>) or send it as Authorization: Bearer <secret> or X-Gitlab-Token")

// gitHook is POST /api/v1/git-hooks/{project}: a push to the project's
// repository calls it, authenticated by the binding's hook secret (not a
// user's token), and it syncs as the user who set the binding.
func (h *handlers) gitHook(w http.ResponseWriter, r *http.Request) error {
	// Every refusal below is a 401 of this scheme; a success clears it.
	w.Header().Set("WWW-Authenticate", `Bearer realm="beluga-git-hook"`)
	project, err := pathName(r, "project")
	if err != nil {
		return hookRefusal
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxHookBody))
	if err != nil {
		return badRequest("read the webhook body: %v (at most %d bytes)", err, maxHookBody)
	}
	ctx := r.Context()
	b, err := h.Store.GitBindingGet(ctx, project)
	if errors.Is(err, store.ErrNotFound) || (err == nil && b.HookSecretSealed == "") {
		return hookRefusal
	}
	if err != nil {
		return storeError(err)
	}
	if h.Secrets == nil {
		return noKey("open the project's webhook secret")
	}
	secret, err := h.Secrets.OpenFor(b.HookSecretSealed, gitHookSealContext(project))
	if err != nil {
		return fmt.Errorf("open the webhook secret of project %q: %w", project, err)
	}
	if !hookAuthentic(r.Header, body, secret) {
		h.log.Info("git webhook refused", zap.String("project", project), zap.String("remote", r.RemoteAddr))
		return hookRefusal
	}
	ctx, err = h.asBindingUser(ctx, b)
	if err != nil {
		return err
	}
	w.Header().Del("WWW-Authenticate")
	out, err := h.gitSync(ctx, project)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}

// hookAuthentic says whether a webhook call proves secret: a GitHub-style
// HMAC-SHA256 of the body, or the secret itself as a bearer token or
// GitLab's X-Gitlab-Token; every comparison takes constant time.
func hookAuthentic(hd http.Header, body []byte, secret string) bool {
	if sig, ok := strings.CutPrefix(hd.Get("X-Hub-Signature-256"), "sha256="); ok {
		got, err := hex.DecodeString(sig)
		if err != nil {
			return false
		}
		mac := hmac.New(sha256.New, []byte(secret))
		mac.Write(body)
		return hmac.Equal(got, mac.Sum(nil))
	}
	tok := hd.Get("X-Gitlab-Token")
	if t, ok := strings.CutPrefix(hd.Get("Authorization"), "Bearer "); ok {
		tok = strings.TrimSpace(t)
	}
	return tok != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(secret)) == 1
}

// asBindingUser is ctx with the user who set b as its caller: a sync that
// no user asked for (the webhook, the leader's periodic sync) is theirs,
// checked as their apply would be. A user who is gone, disabled or may no
// longer edit the project refuses the sync, recorded as a refusal.
func (h *handlers) asBindingUser(ctx context.Context, b model.GitBinding) (context.Context, error) {
	refuse := func(why string) error {
		reason := fmt.Sprintf("the binding's user %q %s: a project owner must set the binding again (beluga git set)", b.BoundBy, why)
		if err := h.Store.GitSyncRefused(ctx, b.Project, "", "", reason); err != nil {
			return err
		}
		return conflict("git sync of project %q: %s", b.Project, reason)
	}
	u, err := h.Store.UserGet(ctx, b.BoundBy)
	if errors.Is(err, store.ErrNotFound) {
		return nil, refuse("no longer exists")
	}
	if err != nil {
		return nil, storeError(err)
	}
	if u.Disabled {
		return nil, refuse("is disabled")
	}
	c := &caller{id: u.ID, name: u.Name, role: u.Role}
	p, err := h.Store.ProjectGet(ctx, b.Project)
	if err != nil {
		return nil, storeError(err)
	}
	l, err := h.level(ctx, c, p.ID)
	if err != nil {
		return nil, err
	}
	if model.GrantRank(l) < model.GrantRank(model.GrantEdit) {
		return nil, refuse("may no longer edit the project")
	}
	return context.WithValue(ctx, callerKey{}, c), nil
}

// GitSyncer runs the Git syncs no request asks for (the leader master's
// periodic ones: master.Config.GitSync) as the webhook does: as the user
// who set the binding, through the same checks and transaction.
type GitSyncer struct{ h *handlers }

// NewGitSyncer is a GitSyncer over d (Store, Secrets, Isolation, Log).
func NewGitSyncer(d Deps) *GitSyncer { return &GitSyncer{h: newHandlers(d)} }

// Sync syncs project's binding; the error says why nothing was applied
// (the binding's state and its git_sync event say it too).
func (g *GitSyncer) Sync(ctx context.Context, project string) error {
	b, err := g.h.Store.GitBindingGet(ctx, project)
	if err != nil {
		return err
	}
	if ctx, err = g.h.asBindingUser(ctx, b); err != nil {
		return err
	}
	_, err = g.h.gitSync(ctx, project)
	return err
}
