package standalone_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/testkit/gittest"
)

// TestWebUIGit: a project bound to a real bare repository. Its page shows
// the binding and the last applied commit; a bad commit synced with the
// Sync button is shown refused with its file and reason. In write_back
// mode the editor's save is a commit by the person with the message they
// typed; in read_only mode the editor says where to edit and does not
// save.
func TestWebUIGit(t *testing.T) {
	t.Parallel()
	e := start(t, "")
	repo := gittest.New(t)
	c1 := repo.Commit("main", "first", map[string]string{"workflows/etl.yaml": "tasks:\n  - {name: load, command: \"echo load\"}\n"})
	bind := func(mode string, status int) {
		e.do("PUT", "/api/v1/projects/demo/git", `{"url":"`+repo.Bare+`","branch":"main","mode":"`+mode+`"}`, status, nil)
	}
	bind("write_back", http.StatusCreated)
	e.do("POST", "/api/v1/projects/demo/git/sync", "", http.StatusOK, nil)
	repo.Commit("main", "bad", map[string]string{"workflows/bad.yaml": "tasks:\n  - {name: a, command: x, depends_on: [nowhere]}\n"})

	b := newBrowser(t, e.base, e.sessionToken())
	b.step(t, 90*time.Second, func(s *session) {
		s.open("#/workflows/demo")
		s.until("the git panel with the applied commit", `document.querySelector('#git-panel')?.textContent.includes(`+jsString(repo.Bare)+`) && `+
			`document.querySelector('#git-last')?.textContent.includes(`+jsString(c1[:12])+`)`)
		s.click(`#git-sync`)
		s.until("the refused commit, its file and reason", `document.querySelector('#git-refused')?.textContent.includes('workflows/bad.yaml') && `+
			`document.querySelector('#git-refused').textContent.includes('nowhere')`)
	})
	repo.Commit("main", "fix", map[string]string{"workflows/bad.yaml": ""})

	b.step(t, 120*time.Second, func(s *session) {
		s.open("#/edit/demo/etl")
		s.until("the editor in write_back mode", `!!document.querySelector('.editflow .node') && !!document.querySelector('#commit-message') && !!document.querySelector('#git-writeback')`)
		s.typeInto(`#commit-message`, "saved from the editor", false)
		s.click(`#save-spec`)
		s.until("the save done", `location.hash === '#/workflows/demo/etl'`)
	})
	if who, _, msg := repo.Head("main"); who != "admin" || msg != "saved from the editor" {
		t.Fatalf("head commit by %q: %q", who, msg)
	}

	bind("read_only", http.StatusOK)
	b.step(t, 90*time.Second, func(s *session) {
		s.open("#/edit/demo/etl")
		s.until("the read-only banner and no save", `document.querySelector('#git-readonly')?.textContent.includes('workflows/etl.yaml') && `+
			`document.querySelector('#save-spec')?.disabled === true`)
	})
}

// jsString is s as a JavaScript string literal.
func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}
