package api

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/secret"
	"github.com/beluga-scheduler/beluga/common/specdiff"
)

// VersionChoice is the version a rerun or recover_failed runs: "latest"
// or a version number (a JSON number or a string of digits). Absent: the
// run's own version.
type VersionChoice int

// UnmarshalJSON reads "latest" or a version number.
func (v *VersionChoice) UnmarshalJSON(b []byte) error {
	s := string(bytes.TrimSpace(b))
	if u, err := strconv.Unquote(s); err == nil {
		s = u
	}
	n, err := parseVersionRef(s)
	if err != nil || n == 0 {
		return fmt.Errorf("field \"version\": want a version number or \"latest\", got %s", b)
	}
	*v = VersionChoice(n)
	return nil
}

// parseVersionRef reads "latest" (model.VersionLatest), a version number,
// or "" (0).
func parseVersionRef(s string) (int, error) {
	switch s {
	case "":
		return 0, nil
	case "latest":
		return model.VersionLatest, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		return 0, fmt.Errorf("want a version number or latest, got %q", s)
	}
	return n, nil
}

// VersionRef names one side of a diff: its version, where it came from.
type VersionRef struct {
	Version   int    `json:"version"`
	SpecHash  string `json:"spec_hash"`
	GitCommit string `json:"git_commit,omitempty"` // the Git sync's commit that made it
	CreatedBy string `json:"created_by,omitempty"`
	CreatedAt Time   `json:"created_at"`
}

// VersionDiff answers GET .../workflows/{name}/diff and
// GET /api/v1/instances/{id}/diff: what changed from one version to
// another, structured and as a unified diff of the YAML.
type VersionDiff struct {
	Project  string     `json:"project"`
	Workflow string     `json:"workflow"`
	From     VersionRef `json:"from"`
	To       VersionRef `json:"to"`
	Same     bool       `json:"same"`
	specdiff.Diff
}

func (h *handlers) diffVersions(w http.ResponseWriter, r *http.Request) error {
	project, name, err := projectAndName(r)
	if err != nil {
		return err
	}
	q := r.URL.Query()
	if q.Get("from") == "" {
		return badRequest("query parameter from is required: a version number or latest (to defaults to latest)")
	}
	from, err := diffSide(q.Get("from"), "from")
	if err != nil {
		return err
	}
	to, err := diffSide(q.Get("to"), "to")
	if err != nil {
		return err
	}
	return h.writeDiff(w, r, project, name, from, to)
}

// diffSide is a diff's from or to: a version number, or 0 for latest.
func diffSide(s, name string) (int, error) {
	n, err := parseVersionRef(s)
	if err != nil {
		return 0, badRequest("query parameter %s: %s", name, err.Error())
	}
	return max(n, 0), nil
}

func (h *handlers) diffInstance(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	inst, err := h.Store.InstanceGet(r.Context(), id)
	if err != nil {
		return storeError(err)
	}
	return h.writeDiff(w, r, inst.Project, inst.Workflow, inst.Version, 0)
}

// writeDiff answers the diff of two versions of project/name (0: latest),
// the specs' secret values masked on both sides.
func (h *handlers) writeDiff(w http.ResponseWriter, r *http.Request, project, name string, from, to int) error {
	a, err := h.Store.WorkflowGet(r.Context(), project, name, from)
	if err != nil {
		return storeError(err)
	}
	b, err := h.Store.WorkflowGet(r.Context(), project, name, to)
	if err != nil {
		return storeError(err)
	}
	d, err := specdiff.Compare(secret.MaskJSON(a.SpecJSON), secret.MaskJSON(b.SpecJSON),
		fmt.Sprintf("%s v%d", name, a.Version), fmt.Sprintf("%s v%d", name, b.Version))
	if err != nil {
		return fmt.Errorf("diff %s v%d and v%d: %w", name, a.Version, b.Version, err)
	}
	writeJSON(w, http.StatusOK, VersionDiff{Project: a.Project, Workflow: name, From: versionRef(a), To: versionRef(b),
		Same: d.Same(), Diff: d})
	return nil
}

func versionRef(d model.WorkflowDefinition) VersionRef {
	return VersionRef{Version: d.Version, SpecHash: d.SpecHash, GitCommit: d.GitCommit, CreatedBy: d.CreatedBy, CreatedAt: timeOf(d.CreatedAt)}
}

// pinVersion is the version a schedule request pins: pin_version, or the
// version a Git sync made from pin_commit (0: none, the latest fires).
func (h *handlers) pinVersion(ctx context.Context, project, name string, req ScheduleRequest) (int, error) {
	switch {
	case req.PinVersion < 0:
		return 0, badRequest("pin_version must be a version number (or left out to fire the latest), got %d", req.PinVersion)
	case req.PinVersion > 0 && req.PinCommit != "":
		return 0, badRequest("give pin_version or pin_commit, not both")
	case req.PinCommit != "":
		def, err := h.Store.WorkflowVersionOfCommit(ctx, project, name, strings.TrimSpace(req.PinCommit))
		if err != nil {
			return 0, storeError(err)
		}
		return def.Version, nil
	}
	return req.PinVersion, nil // the store checks that it exists, in its write
}

// versionsOfInstance fills the version facts of an instance's answer: the
// Git commit its version came from and the workflow's latest version.
func (h *handlers) versionsOfInstance(r *http.Request, inst model.WorkflowInstance, out *InstanceDetail) error {
	// A finished run outlives its workflow's delete: it then has neither.
	commit, latest, err := h.Store.VersionFacts(r.Context(), inst.DefinitionID, inst.ProjectID, inst.Workflow)
	if err != nil {
		return err
	}
	out.GitCommit, out.LatestVersion = commit, latest
	return nil
}

// MarshalJSON writes "latest" or the number.
func (v VersionChoice) MarshalJSON() ([]byte, error) {
	if v == model.VersionLatest {
		return []byte(`"latest"`), nil
	}
	return []byte(strconv.Itoa(int(v))), nil
}
