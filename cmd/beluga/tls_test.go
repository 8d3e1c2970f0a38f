package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTLSSettingsChecked: half a TLS setting, or files that are not a
// certificate, make every server role exit 2 naming the setting, before
// anything waits on ZooKeeper or the database.
func TestTLSSettingsChecked(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.pem")
	if err := os.WriteFile(junk, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sec, db := secretFile(t), "sqlite://"+dir+"/b.db"
	half := []string{"--tls-cert", junk}
	bad := []string{"--tls-cert", junk, "--tls-key", junk, "--tls-ca", junk}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{append([]string{"master", "--zk", "127.0.0.1:1", "--db", db, "--cluster-secret-file", sec}, half...), "missing --tls-key"},
		{append([]string{"worker", "--zk", "127.0.0.1:1", "--data-dir", dir, "--cluster-secret-file", sec}, half...), "missing --tls-key"},
		{append([]string{"api", "--zk", "127.0.0.1:1", "--db", db, "--cluster-secret-file", sec}, half...), "missing --tls-key"},
		{append([]string{"standalone", "--data-dir", dir}, half...), "missing --tls-key"},
		{append([]string{"master", "--zk", "127.0.0.1:1", "--db", db, "--cluster-secret-file", sec}, bad...), "tls certificate " + junk},
	} {
		var out, errb bytes.Buffer
		code := run(tc.args, &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Fatalf("beluga %v: exit %d, stderr %q; want exit 2 naming %q", tc.args, code, errb.String(), tc.want)
		}
	}
}
