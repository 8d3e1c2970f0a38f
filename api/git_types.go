package api

import (
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
)

// GitBindingRequest is the JSON body of PUT .../projects/{project}/git:
// the project's repository (README, "Workflows in Git").
type GitBindingRequest struct {
	// URL is https://, http:// or (admins only: it reads the server's
	// disk) file:// or an absolute local path.
	URL    string `json:"url"`
	Branch string `json:"branch,omitempty"` // "": the repository's default branch
	Dir    string `json:"dir,omitempty"`    // the directory in the repository; "": its root
	User   string `json:"user,omitempty"`
	// Password is a password or token for User, stored sealed as datasource
	// passwords are; left out keeps the stored one, "" removes it.
	Password *string `json:"password,omitempty"`
	// SSHKey is an SSH URL's private key (PEM or OpenSSH format, no
	// passphrase), stored sealed; left out keeps the stored one.
	SSHKey *string `json:"ssh_key,omitempty"`
	// KnownHosts is what an SSH server's host key must match: known_hosts
	// lines (ssh-keyscan's output) or SHA256: fingerprints, one a line.
	KnownHosts string `json:"known_hosts,omitempty"`
	// SyncInterval is how often, in minutes, the leader master syncs the
	// binding by itself (0 or left out: never).
	SyncInterval int `json:"sync_interval,omitempty"`
	// Mode is what an edit outside Git does: "" (made in Beluga only),
	// "read_only" (refused) or "write_back" (committed to the branch).
	Mode string `json:"mode,omitempty"`
	// AlertChannels are told once per refused commit.
	AlertChannels []string `json:"alert_channels,omitempty"`
	// NewHookSecret makes a new webhook secret, answered once in
	// hook_secret; false keeps the one there is (DropHookSecret removes it).
	NewHookSecret  bool `json:"new_hook_secret,omitempty"`
	DropHookSecret bool `json:"drop_hook_secret,omitempty"`
}

// GitBinding is a project's repository and its last sync, without the
// password.
type GitBinding struct {
	Project     string `json:"project"`
	URL         string `json:"url"`
	Branch      string `json:"branch"`
	Dir         string `json:"dir"`
	User        string `json:"user"`
	PasswordSet bool   `json:"password_set"`
	SSHKeySet   bool   `json:"ssh_key_set"`
	KnownHosts  string `json:"known_hosts,omitempty"`
	BoundBy     string `json:"bound_by"`
	UpdatedAt   Time   `json:"updated_at"`
	// The last commit applied ("" none yet), and the last sync: when, of
	// which commit, and (refused) the file and the reason.
	LastCommit        string   `json:"last_commit"`
	LastSyncedAt      *Time    `json:"last_synced_at,omitempty"`
	LastAttemptCommit string   `json:"last_attempt_commit"`
	LastErrorFile     string   `json:"last_error_file,omitempty"`
	LastError         string   `json:"last_error,omitempty"`
	SyncInterval      int      `json:"sync_interval"` // minutes; 0: never by itself
	Mode              string   `json:"mode"`
	AlertChannels     []string `json:"alert_channels"`
	HookSet           bool     `json:"hook_set"` // a webhook secret is set
	// HookSecret is answered once, by the PUT that made it.
	HookSecret string `json:"hook_secret,omitempty"`
}

func fromGitBinding(b model.GitBinding) GitBinding {
	out := GitBinding{Project: b.Project, URL: b.URL, Branch: b.Branch, Dir: b.Dir, User: b.User,
		PasswordSet: b.PasswordSealed != "", SSHKeySet: b.SSHKeySealed != "", KnownHosts: b.KnownHosts, BoundBy: b.BoundBy, UpdatedAt: timeOf(b.UpdatedAt),
		LastCommit: b.LastCommit, LastAttemptCommit: b.LastAttemptCommit, LastErrorFile: b.LastErrorFile,
		LastError: b.LastError, SyncInterval: int(b.SyncInterval / time.Minute), Mode: b.Mode,
		AlertChannels: append([]string{}, b.AlertChannels...), HookSet: b.HookSecretSealed != ""}
	if b.LastSyncedAt != nil {
		t := timeOf(*b.LastSyncedAt)
		out.LastSyncedAt = &t
	}
	return out
}

// GitSyncResult is what a sync applied: the commit and each file, by kind
// (a schedule's entry names its workflow; a reference's, in name, the
// datasource or task group it checked).
type GitSyncResult struct {
	Project     string           `json:"project"`
	Commit      string           `json:"commit"`
	Workflows   []GitSyncedEntry `json:"workflows"`
	Schedules   []GitSyncedEntry `json:"schedules,omitempty"`
	Datasources []GitSyncedEntry `json:"datasources,omitempty"`
	TaskGroups  []GitSyncedEntry `json:"task_groups,omitempty"`
}

// GitSyncedEntry is one file a sync applied (or checked: a reference).
type GitSyncedEntry struct {
	File     string `json:"file"`
	Workflow string `json:"workflow"`       // a workflow's, or the one a schedule's file schedules
	Name     string `json:"name,omitempty"` // a reference's: the datasource or task group
	Version  int    `json:"version"`
	Created  bool   `json:"created"`           // a new version; false: the same as the latest
	Deleted  bool   `json:"deleted,omitempty"` // the file is gone: the workflow was deleted
}
