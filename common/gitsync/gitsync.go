// Package gitsync reads a project's workflows from a Git repository
// (README, "Workflows in Git"): it fetches a branch's head with go-git (a
// remote's in memory, a local one in place; no git binary, no working
// tree), lists the files of the layout, and decides what a synced file may
// not hold (secrets in clear). Applying them is the API's: the same checks as an apply, then
// one store transaction per commit.
package gitsync

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"
	"gopkg.in/yaml.v3"

	"github.com/beluga-scheduler/beluga/common/secret"
	"github.com/beluga-scheduler/beluga/common/spec"
)

// The directories, under the binding's, of the files a sync reads: one
// file a workflow (workflows/<name>.yaml), a workflow's schedule
// (schedules/<workflow>.yaml), a datasource reference
// (datasources/<name>.yaml) and a task group reference
// (task-groups/<name>.yaml), each named after what it holds.
const (
	WorkflowsDir   = "workflows"
	SchedulesDir   = "schedules"
	DatasourcesDir = "datasources"
	TaskGroupsDir  = "task-groups"
)

// MaxFileBytes bounds one synced file, as the API bounds an apply's body.
const MaxFileBytes = 8 << 20

// MaxFiles and MaxTotalBytes bound what one sync reads and parses, so that
// a repository cannot make an API server hold more than that.
const (
	MaxFiles      = 1000
	MaxTotalBytes = 64 << 20
)

// Source is where a sync reads from.
type Source struct {
	URL      string
	Branch   string // "": the remote's HEAD
	Dir      string // "": the repository's root
	User     string
	Password string // opened from its sealed form by the caller
	// SSHKey is an SSH URL's private key (opened by the caller) and
	// KnownHosts what the server's host key must match (IsSSH).
	SSHKey     string
	KnownHosts string
}

// File is one file of a commit.
type File struct {
	Path     string // in the repository
	Workflow string // the name the file gives (its base name without extension)
	Data     []byte
}

// Snapshot is what a sync read: the commit and its files, each kind by
// path. A schedule file's Workflow is the workflow it schedules; a
// reference's, the datasource or task group it names.
type Snapshot struct {
	Commit      string
	Files       []File // the workflows
	Schedules   []File
	Datasources []File
	TaskGroups  []File
}

// Fetch reads src's branch head. A remote's clone (one commit deep) lives
// in memory only and is dropped on return: a sync reads the commit it
// applies, whole, each time. A local repository (an absolute path or a
// file URL) is read where it is, without a clone or the git binary.
func Fetch(ctx context.Context, src Source) (Snapshot, error) {
	if err := ctx.Err(); err != nil {
		return Snapshot{}, fmt.Errorf("fetch %s: %w", src.URL, err)
	}
	repo, err := open(ctx, src)
	if err != nil {
		return Snapshot{}, err
	}
	var head *plumbing.Reference
	if src.Branch != "" {
		head, err = repo.Reference(plumbing.NewBranchReferenceName(src.Branch), true)
	} else {
		head, err = repo.Head()
	}
	if err != nil {
		return Snapshot{}, fmt.Errorf("read branch %s of %s: %w", branchName(src.Branch), src.URL, err)
	}
	c, err := repo.CommitObject(head.Hash())
	if err != nil {
		return Snapshot{}, fmt.Errorf("read commit %s: %w", head.Hash(), err)
	}
	snap := Snapshot{Commit: head.Hash().String()}
	root, err := c.Tree()
	if err != nil {
		return snap, err
	}
	b := &budget{}
	for _, d := range []struct {
		dir string
		out *[]File
	}{{WorkflowsDir, &snap.Files}, {SchedulesDir, &snap.Schedules}, {DatasourcesDir, &snap.Datasources}, {TaskGroupsDir, &snap.TaskGroups}} {
		if *d.out, err = dirFiles(root, src.Dir, d.dir, b); err != nil {
			return Snapshot{Commit: snap.Commit}, err
		}
	}
	return snap, nil
}

// open opens a local repository in place, or clones a remote's branch
// into memory.
func open(ctx context.Context, src Source) (_ *git.Repository, err error) {
	if p, ok := LocalPath(src.URL); ok {
		repo, err := git.PlainOpen(p)
		if err != nil {
			return nil, fmt.Errorf("open repository %s: %w", p, err)
		}
		if _, err := repo.Head(); errors.Is(err, plumbing.ErrReferenceNotFound) {
			return nil, fmt.Errorf("repository %s is empty: push a commit first", src.URL)
		}
		return repo, nil
	}
	opts := &git.CloneOptions{URL: src.URL, SingleBranch: true, NoCheckout: true, Tags: git.NoTags, Depth: 1}
	if src.Branch != "" {
		opts.ReferenceName = plumbing.NewBranchReferenceName(src.Branch)
	}
	if opts.Auth, err = auth(src); err != nil {
		return nil, fmt.Errorf("fetch %s: %w", src.URL, err)
	}
	repo, err := git.CloneContext(ctx, memory.NewStorage(), nil, opts)
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return nil, fmt.Errorf("repository %s is empty: push a commit first", src.URL)
	}
	if err != nil {
		return nil, fmt.Errorf("fetch %s (branch %s): %w", src.URL, branchName(src.Branch), err)
	}
	return repo, nil
}

// LocalPath is the path of a local repository URL (an absolute path or a
// file URL); ok is false for a remote one.
func LocalPath(raw string) (string, bool) {
	if filepath.IsAbs(raw) {
		return raw, true
	}
	if u, err := url.Parse(raw); err == nil && u.Scheme == "file" {
		return u.Path, true
	}
	return "", false
}

func branchName(b string) string {
	if b == "" {
		return "HEAD"
	}
	return b
}

// budget is what one sync has read so far, across its directories.
type budget struct {
	files int
	bytes int64
}

// dirFiles reads the files of root under dir/sub that WorkflowName takes,
// sorted by path. A missing directory is no files.
func dirFiles(root *object.Tree, dir, sub string, b *budget) ([]File, error) {
	wdir := path.Join(cleanDir(dir), sub)
	t, err := root.Tree(wdir)
	if errors.Is(err, object.ErrDirectoryNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", wdir, err)
	}
	var out []File
	for _, e := range t.Entries {
		if !e.Mode.IsFile() {
			continue
		}
		p := path.Join(wdir, e.Name)
		name, ok := WorkflowName(e.Name)
		if !ok {
			continue
		}
		if b.files == MaxFiles {
			return nil, &FileError{File: p, Reason: fmt.Sprintf("the repository holds more than %d files to sync, the most one sync reads", MaxFiles)}
		}
		b.files++
		f, err := t.TreeEntryFile(&e)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		if f.Size > MaxFileBytes {
			return nil, &FileError{File: p, Reason: fmt.Sprintf("%d bytes, more than the %d a synced file may have", f.Size, MaxFileBytes)}
		}
		if b.bytes += f.Size; b.bytes > MaxTotalBytes {
			return nil, &FileError{File: p, Reason: fmt.Sprintf("the synced files pass %d bytes here, the most one sync reads", MaxTotalBytes)}
		}
		r, err := f.Reader()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		data, err := io.ReadAll(r)
		_ = r.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out = append(out, File{Path: p, Workflow: name, Data: data})
	}
	slices.SortFunc(out, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	return out, nil
}

// FileError is a refused file: its path in the repository and why.
type FileError struct {
	File   string
	Reason string
}

func (e *FileError) Error() string { return e.File + ": " + e.Reason }

// WorkflowName is the workflow a file of the workflows directory holds:
// its base name without .yaml, .yml or .json. Other files (a README) are
// not workflows: ok is false.
func WorkflowName(base string) (name string, ok bool) {
	for _, ext := range []string{".yaml", ".yml", ".json"} {
		if n, found := strings.CutSuffix(base, ext); found && n != "" && !strings.HasPrefix(base, ".") {
			return n, true
		}
	}
	return "", false
}

// cleanDir is dir as a path in the repository ("" or "." is its root).
func cleanDir(dir string) string {
	d := path.Clean("/" + strings.TrimSpace(dir))
	return strings.TrimPrefix(d, "/")
}

// CheckDir refuses a directory that leaves the repository's root.
func CheckDir(dir string) error {
	if strings.Contains(dir, "\\") {
		return fmt.Errorf("dir %q: use / between directories", dir)
	}
	for _, part := range strings.Split(dir, "/") {
		if part == ".." {
			return fmt.Errorf("dir %q: may not contain ..", dir)
		}
	}
	return nil
}

// secretish are the parts of a param name that say it holds a secret.
var secretish = []string{"password", "passwd", "secret", "token", "api_key", "apikey", "private_key", "credential"}

// SecretsInClear lists the secrets a synced spec would carry in clear,
// each named: a param marked secret (secret_params) with a value other
// than the mask *** (which keeps the value stored in Beluga) or none (given
// at run), and a param whose name says it is a secret but that is not
// marked secret and has a value. Git holds secrets by name only.
func SecretsInClear(w *spec.Workflow) []string {
	bad := ParamsInClear("workflow", w.Params, w.SecretParams)
	for _, t := range w.Tasks {
		bad = append(bad, ParamsInClear(fmt.Sprintf("task %q", t.Name), t.Params, append(slices.Clone(w.SecretParams), t.SecretParams...))...)
	}
	return bad
}

func looksSecret(name string) bool {
	n := strings.ToLower(name)
	for _, s := range secretish {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// FileOf is what a write-back commits for an applied spec: body itself
// when it holds no secret in clear (the author's layout and comments
// kept), else the spec as YAML with every secret param's value written
// as the mask, which keeps the value stored in Beluga when it syncs back.
func FileOf(body []byte, w *spec.Workflow) ([]byte, error) {
	if len(SecretsInClear(w)) == 0 {
		return body, nil
	}
	return SpecFile(w)
}

// SpecFile is w as a YAML file with every secret param's value (in clear
// or sealed) written as the mask: what a write-back commits of a spec
// that has no text of its own (a promotion's, stored as JSON).
func SpecFile(w *spec.Workflow) ([]byte, error) {
	raw, err := json.Marshal(w)
	if err != nil {
		return nil, err
	}
	c, err := spec.ParseStored(raw) // a copy to mask
	if err != nil {
		return nil, err
	}
	mask := func(params map[string]string, marked []string) {
		for k, v := range params {
			if v != "" && (slices.Contains(marked, k) || looksSecret(k)) {
				params[k] = secret.Mask
			}
		}
	}
	mask(c.Params, c.SecretParams)
	for i := range c.Tasks {
		mask(c.Tasks[i].Params, append(slices.Clone(c.SecretParams), c.Tasks[i].SecretParams...))
	}
	if raw, err = json.Marshal(c); err != nil {
		return nil, err
	}
	var n yaml.Node // JSON is YAML: decoded in its order, written back in block style
	if err := yaml.Unmarshal(raw, &n); err != nil {
		return nil, err
	}
	blockStyle(&n)
	return yaml.Marshal(&n)
}

func blockStyle(n *yaml.Node) {
	if n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode {
		n.Style = 0
	}
	if n.Kind == yaml.ScalarNode && n.Style == yaml.DoubleQuotedStyle && n.Tag == "!!str" {
		n.Style = 0 // yaml.Marshal quotes what needs it
	}
	for _, c := range n.Content {
		blockStyle(c)
	}
}
