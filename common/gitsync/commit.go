package gitsync

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/memory"
)

// ErrMoved is a write-back that lost a race: the branch moved since it was
// read (a push elsewhere); nothing was written. Sync, then save again.
var ErrMoved = errors.New("the branch moved while the change was committed (not a fast-forward)")

// Change is one write-back: a file of the repository written (Data) or
// removed (Data nil), by Author with Message.
type Change struct {
	Path    string // in the repository
	Data    []byte // nil: remove the file
	Author  object.Signature
	Message string
}

// Commit commits c on src's branch and returns the commit. A local
// repository gets the commit and its branch moved in place (compare and
// set: a branch moved meanwhile is ErrMoved); a remote one is cloned into
// memory, committed to and pushed with src's credentials (a push that is
// not a fast-forward is ErrMoved). No git binary and no working tree.
func Commit(ctx context.Context, src Source, c Change) (string, error) {
	if src.Branch == "" {
		return "", errors.New("a write-back needs the binding's branch")
	}
	ref := plumbing.NewBranchReferenceName(src.Branch)
	var repo *git.Repository
	var err error
	local := false
	if p, ok := LocalPath(src.URL); ok {
		local = true
		repo, err = git.PlainOpen(p)
	} else {
		opts := &git.CloneOptions{URL: src.URL, ReferenceName: ref, SingleBranch: true, NoCheckout: true, Tags: git.NoTags}
		if opts.Auth, err = auth(src); err != nil {
			return "", fmt.Errorf("open %s for a write-back: %w", src.URL, err)
		}
		repo, err = git.CloneContext(ctx, memory.NewStorage(), nil, opts)
	}
	if err != nil {
		return "", fmt.Errorf("open %s for a write-back: %w", src.URL, err)
	}
	old, err := repo.Reference(ref, true)
	var parents []plumbing.Hash
	var root *object.Tree
	switch {
	case errors.Is(err, plumbing.ErrReferenceNotFound):
	case err != nil:
		return "", fmt.Errorf("read branch %s: %w", src.Branch, err)
	default:
		head, err := repo.CommitObject(old.Hash())
		if err != nil {
			return "", fmt.Errorf("read commit %s: %w", old.Hash(), err)
		}
		if root, err = head.Tree(); err != nil {
			return "", err
		}
		parents = []plumbing.Hash{head.Hash}
	}
	st := repo.Storer
	blob := plumbing.ZeroHash
	if c.Data != nil {
		if blob, err = writeBlob(st, c.Data); err != nil {
			return "", err
		}
	}
	tree, err := putPath(st, root, strings.Split(path.Clean(c.Path), "/"), blob)
	if err != nil {
		return "", fmt.Errorf("write %s: %w", c.Path, err)
	}
	if root != nil && tree == root.Hash {
		return old.Hash().String(), nil // nothing to commit: the file is already so
	}
	if c.Author.When.IsZero() {
		c.Author.When = time.Now()
	}
	commit := &object.Commit{Author: c.Author, Committer: c.Author, Message: c.Message, TreeHash: tree, ParentHashes: parents}
	obj := st.NewEncodedObject()
	if err := commit.Encode(obj); err != nil {
		return "", err
	}
	hash, err := st.SetEncodedObject(obj)
	if err != nil {
		return "", err
	}
	next := plumbing.NewHashReference(ref, hash)
	if local {
		if err := st.CheckAndSetReference(next, old); err != nil {
			return "", fmt.Errorf("%w: %v", ErrMoved, err)
		}
		return hash.String(), nil
	}
	if err := st.SetReference(next); err != nil {
		return "", err
	}
	opts := &git.PushOptions{RemoteName: "origin", RefSpecs: []config.RefSpec{config.RefSpec(ref + ":" + ref)}}
	if opts.Auth, err = auth(src); err != nil {
		return "", err
	}
	if err := repo.PushContext(ctx, opts); err != nil {
		if errors.Is(err, git.ErrNonFastForwardUpdate) || strings.Contains(err.Error(), "non-fast-forward") {
			return "", fmt.Errorf("%w: %v", ErrMoved, err)
		}
		return "", fmt.Errorf("push to %s: %w", src.URL, err)
	}
	return hash.String(), nil
}

func writeBlob(st storer.EncodedObjectStorer, data []byte) (plumbing.Hash, error) {
	obj := st.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	w, err := obj.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(data); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	return st.SetEncodedObject(obj)
}

// putPath writes blob at parts under t (nil: an empty tree), or removes
// the entry there (blob zero), and returns the new tree's hash; the trees
// on the way are written anew, the others shared.
func putPath(st storer.EncodedObjectStorer, t *object.Tree, parts []string, blob plumbing.Hash) (plumbing.Hash, error) {
	var entries []object.TreeEntry
	if t != nil {
		entries = slices.Clone(t.Entries)
	}
	name := parts[0]
	i := slices.IndexFunc(entries, func(e object.TreeEntry) bool { return e.Name == name })
	var entry object.TreeEntry
	switch {
	case len(parts) == 1 && blob.IsZero():
		if i < 0 {
			return hashOf(t), nil
		}
		entries = slices.Delete(entries, i, i+1)
	case len(parts) == 1:
		entry = object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: blob}
	default:
		var sub *object.Tree
		if i >= 0 && entries[i].Mode == filemode.Dir {
			var err error
			if sub, err = object.GetTree(st, entries[i].Hash); err != nil {
				return plumbing.ZeroHash, err
			}
		}
		h, err := putPath(st, sub, parts[1:], blob)
		if err != nil {
			return plumbing.ZeroHash, err
		}
		if h.IsZero() { // the directory is empty now: it goes
			if i >= 0 {
				entries = slices.Delete(entries, i, i+1)
			}
			break
		}
		entry = object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: h}
	}
	if entry.Name != "" {
		if i >= 0 {
			entries[i] = entry
		} else {
			entries = append(entries, entry)
		}
	}
	if len(entries) == 0 {
		return plumbing.ZeroHash, nil
	}
	// Git's order: by name, a directory's as if it ended in "/".
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	slices.SortFunc(entries, func(a, b object.TreeEntry) int { return strings.Compare(key(a), key(b)) })
	nt := &object.Tree{Entries: entries}
	obj := st.NewEncodedObject()
	if err := nt.Encode(obj); err != nil {
		return plumbing.ZeroHash, err
	}
	return st.SetEncodedObject(obj)
}

func hashOf(t *object.Tree) plumbing.Hash {
	if t == nil {
		return plumbing.ZeroHash
	}
	return t.Hash
}

// FilePath is the file of workflow name under the binding's dir: its
// recorded origin when it came from Git, else <dir>/workflows/<name>.yaml.
func FilePath(dir, origin, name string) string {
	if origin != "" {
		return origin
	}
	return path.Join(cleanDir(dir), WorkflowsDir, name+".yaml")
}
