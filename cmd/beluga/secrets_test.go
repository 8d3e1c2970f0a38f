package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDBPasswordNeverShows: a database URL that does not parse, or parses
// but is refused, is named in the error with its password redacted.
func TestDBPasswordNeverShows(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "db-url")
	sec := secretFile(t)
	for _, tc := range []struct {
		args []string
		file string
		want string
	}{
		{args: []string{"master", "--zk", "127.0.0.1:1", "--cluster-secret-file", sec, "--db", "mysql://root:hunter2%zz@db:3306/beluga"}, want: "invalid URL escape"},
		{args: []string{"master", "--zk", "127.0.0.1:1", "--cluster-secret-file", sec, "--db", "mysql://root:hunter2@db:3306"}, want: "needs a database name"},
		{args: []string{"standalone", "--data-dir", dir, "--db", "oracle://root:hunter2@db/beluga"}, want: "postgres:// or sqlite://"},
		{args: []string{"db", "migrate", "--db", "postgres://root:hunter2@127.0.0.1:1/beluga?connect_timeout=2"}, want: "open postgres database"},
		{args: []string{"db", "migrate", "--db", "mysql://root:hunter2@127.0.0.1:1/beluga?timeout=2s"}, want: "open mysql database"},
		{args: []string{"master", "--zk", "127.0.0.1:1", "--cluster-secret-file", sec, "--db-file", file}, file: "mysql://root:hunter2%zz@db/beluga\n", want: "invalid URL escape"},
	} {
		if tc.file != "" {
			if err := os.WriteFile(file, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		var out, errb bytes.Buffer
		code := run(tc.args, &out, &errb)
		if code == 0 || !strings.Contains(errb.String(), tc.want) || strings.Contains(errb.String()+out.String(), "hunter2") {
			t.Fatalf("beluga %v: exit %d, stderr %q; want an error naming %q without the password", tc.args, code, errb.String(), tc.want)
		}
	}
}

// TestDBFile: the database URL can come from a file (--db-file or
// BELUGA_DB_FILE), so that no password sits on the command line, where ps
// shows it.
func TestDBFile(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "db-url")
	if err := os.WriteFile(file, []byte("sqlite://"+filepath.Join(dir, "f.db")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run([]string{"db", "migrate", "--db-file", file}, &out, &errb); code != 0 || !strings.Contains(out.String(), "applied") {
		t.Fatalf("--db-file: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "f.db")); err != nil {
		t.Fatalf("the file's database was not the one migrated: %v", err)
	}

	t.Setenv("BELUGA_DB_FILE", file)
	out.Reset()
	errb.Reset()
	if code := run([]string{"db", "migrate"}, &out, &errb); code != 0 || !strings.Contains(out.String(), "up to date") {
		t.Fatalf("BELUGA_DB_FILE: exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}

	// Both a URL and a file is ambiguous; a missing file names itself.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"db", "migrate", "--db", "sqlite://" + filepath.Join(dir, "g.db")}, "not both"},
		{[]string{"db", "migrate", "--db-file", filepath.Join(dir, "missing")}, "missing"},
	} {
		out.Reset()
		errb.Reset()
		if code := run(tc.args, &out, &errb); code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Fatalf("beluga %v: exit %d, stderr %q; want exit 2 naming %q", tc.args, code, errb.String(), tc.want)
		}
	}
}
