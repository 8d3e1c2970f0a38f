package model

import "time"

// EventGitSync is the event of a Git sync of a project: state synced or
// refused, the commit and (refused) the file and reason in its detail.
const EventGitSync = "git_sync"

// What an edit outside Git (an apply or delete through the API, UI or CLI)
// does in a project bound to a repository.
const (
	GitModeFree      = ""           // it is made in Beluga only; the next sync may undo it
	GitModeReadOnly  = "read_only"  // it is refused: edit the repository
	GitModeWriteBack = "write_back" // it is committed to the branch first, as its user
)

// GitBinding is a project's Git repository (README, "Workflows in Git").
type GitBinding struct {
	Project string
	// URL is a remote URL (https://, ssh://, file://) or a local path.
	URL    string
	Branch string // "" is the repository's default branch (HEAD)
	Dir    string // the directory in the repository holding the files; "" the root
	User   string // the credential's user name, with PasswordSealed
	// PasswordSealed is the password or token sealed under the secret key
	// file (KeepPassword-like: store.KeepGitPassword keeps the stored one).
	PasswordSealed string
	BoundBy        string // the user who set the binding: the author of what syncs apply
	UpdatedAt      time.Time
	// SyncInterval is how often the leader master syncs the binding by
	// itself (0: never; a sync, the webhook and the CLI still do).
	SyncInterval time.Duration
	Mode         string // GitModeFree, GitModeReadOnly or GitModeWriteBack
	// HookSecretSealed authenticates the webhook (sealed as the password;
	// store.KeepGitPassword keeps the stored one, "" has none).
	HookSecretSealed string
	AlertChannels    []string // told once per refused commit
	// SSHKeySealed is an SSH URL's private key (PEM), sealed as the
	// password (store.KeepGitPassword keeps the stored one, "" has none).
	SSHKeySealed string
	// KnownHosts is what the SSH server's host key must match: lines of an
	// OpenSSH known_hosts file, or SHA256:... fingerprints, one a line.
	KnownHosts string

	// The sync state.
	LastCommit        string     // the last commit applied
	LastSyncedAt      *time.Time // when a sync last ended, applied or refused
	LastAttemptCommit string     // the commit of the last sync
	LastErrorFile     string     // the last sync's refused file ("" when it applied)
	LastError         string     // and why
}
