package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// secretFile writes a cluster secret for commands under test.
func secretFile(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "cluster-secret")
	if err := os.WriteFile(p, []byte("a test cluster secret of 32 b.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestClusterRolesNeedTheSecret: master, worker and api refuse to start
// without a cluster secret, or with one shorter than 16 bytes, exit 2
// naming the setting, before anything waits on ZooKeeper or the database.
func TestClusterRolesNeedTheSecret(t *testing.T) {
	dir := t.TempDir()
	short := filepath.Join(dir, "short")
	if err := os.WriteFile(short, []byte("tooshort\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	db := "sqlite://" + dir + "/b.db"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"master", "--zk", "127.0.0.1:1", "--db", db}, "--cluster-secret-file (BELUGA_CLUSTER_SECRET_FILE, config cluster.secret_file) is required"},
		{[]string{"worker", "--zk", "127.0.0.1:1", "--data-dir", dir}, "--cluster-secret-file (BELUGA_CLUSTER_SECRET_FILE, config cluster.secret_file) is required"},
		{[]string{"api", "--zk", "127.0.0.1:1", "--db", db}, "--cluster-secret-file (BELUGA_CLUSTER_SECRET_FILE, config cluster.secret_file) is required"},
		{[]string{"worker", "--zk", "127.0.0.1:1", "--data-dir", dir, "--cluster-secret-file", short}, "8 bytes: want at least 16"},
		{[]string{"master", "--zk", "127.0.0.1:1", "--db", db, "--cluster-secret-file", filepath.Join(dir, "missing")}, "no such file"},
	} {
		var out, errb bytes.Buffer
		code := run(tc.args, &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Fatalf("beluga %v: exit %d, stderr %q; want exit 2 naming %q", tc.args, code, errb.String(), tc.want)
		}
	}
}
