package gitsync

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/beluga-scheduler/beluga/testkit/gittest"
)

func TestIsSSH(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		url string
		ssh bool
		ok  bool // CheckSSHURL
	}{
		{"ssh://git@example.com/data/etl.git", true, true},
		{"ssh://git@example.com:2222/data/etl.git", true, true},
		{"git@example.com:data/etl.git", true, true},
		{"example.com:data/etl.git", true, true},
		{"ssh://example.com/", true, false},
		{"ssh://git:pw@example.com/x.git", true, false},
		{"https://example.com/x.git", false, false},
		{"/srv/git/x.git", false, false},
		{"file:///srv/git/x.git", false, false},
	} {
		if got := IsSSH(c.url); got != c.ssh {
			t.Errorf("IsSSH(%q) = %v, want %v", c.url, got, c.ssh)
		}
		if c.ssh {
			if err := CheckSSHURL(c.url); (err == nil) != c.ok {
				t.Errorf("CheckSSHURL(%q) = %v, want ok %v", c.url, err, c.ok)
			}
		}
	}
}

func TestCheckKnownHosts(t *testing.T) {
	t.Parallel()
	line := "[127.0.0.1]:2222 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEmLrXWyGH0Np7aZxWaNn0Lh8hkw2bXfN6ylqcE2ng0r"
	for _, c := range []struct {
		text string
		want string // "" ok, else part of the error
	}{
		{line, ""},
		{"# a comment\n" + line + "\n", ""},
		{"SHA256:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU", ""},
		{"", "known_hosts is required"},
		{"# only a comment", "no host key"},
		{line + "\nnot a key line", "line 2"},
	} {
		err := CheckKnownHosts(c.text)
		if (c.want == "") != (err == nil) || err != nil && !strings.Contains(err.Error(), c.want) {
			t.Errorf("CheckKnownHosts(%q) = %v, want %q", c.text, err, c.want)
		}
	}
}

// TestSSHFetchAndCommit reads and writes a repository served by a real
// sshd: the host key given as a known_hosts line or a fingerprint is
// accepted, an unknown one refused (nothing read), and a write-back is
// pushed over SSH with the key.
func TestSSHFetchAndCommit(t *testing.T) {
	t.Parallel()
	repo := gittest.New(t)
	c1 := repo.Commit("main", "one", map[string]string{"workflows/a.yaml": "a"})
	srv := repo.ServeSSH()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, known := range []string{srv.KnownHosts, srv.Fingerprint} {
		snap, err := Fetch(ctx, Source{URL: srv.URL, Branch: "main", SSHKey: srv.Key, KnownHosts: known})
		if err != nil {
			t.Fatalf("fetch over ssh with %q: %v", known, err)
		}
		if snap.Commit != c1 || len(snap.Files) != 1 || snap.Files[0].Workflow != "a" {
			t.Fatalf("fetch over ssh: %+v", snap)
		}
	}
	_, err := Fetch(ctx, Source{URL: srv.URL, Branch: "main", SSHKey: srv.Key, KnownHosts: srv.OtherHost})
	if err == nil || !strings.Contains(err.Error(), "not the one known_hosts gives") {
		t.Fatalf("fetch from a host whose key is not the known one: %v", err)
	}
	other := strings.Replace(srv.OtherHost, "[127.0.0.1]", "[example.invalid]", 1)
	_, err = Fetch(ctx, Source{URL: srv.URL, Branch: "main", SSHKey: srv.Key, KnownHosts: other})
	if err == nil || !strings.Contains(err.Error(), "is unknown") {
		t.Fatalf("fetch from an unknown host: %v", err)
	}
	_, err = Fetch(ctx, Source{URL: srv.URL, Branch: "main", KnownHosts: srv.KnownHosts})
	if err == nil || !strings.Contains(err.Error(), "no ssh_key") {
		t.Fatalf("fetch without a key: %v", err)
	}
	src := Source{URL: srv.URL, Branch: "main", SSHKey: srv.Key, KnownHosts: srv.KnownHosts}
	c2, err := Commit(ctx, src, Change{Path: "schedules/a.yaml", Data: []byte("cron: 0 2 * * *\n"), Message: "schedule a",
		Author: object.Signature{Name: "ann", Email: "ann@users.beluga.invalid"}})
	if err != nil {
		t.Fatalf("commit over ssh: %v", err)
	}
	if got := repo.Show("main", "schedules/a.yaml"); got != "cron: 0 2 * * *\n" {
		t.Fatalf("the pushed file is %q", got)
	}
	if author, _, msg := repo.Head("main"); author != "ann" || msg != "schedule a" {
		t.Fatalf("head after the push: %s %q", author, msg)
	}
	snap, err := Fetch(ctx, src)
	if err != nil || snap.Commit != c2 || len(snap.Schedules) != 1 || snap.Schedules[0].Workflow != "a" {
		t.Fatalf("fetch after the push: %+v %v", snap, err)
	}
}
