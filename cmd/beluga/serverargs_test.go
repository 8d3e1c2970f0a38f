package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestServerCommandsRefuseBadSettings: bad settings of the long-running
// commands exit 2 with a message naming the problem, before anything
// starts or waits (the ZooKeeper address here has nothing listening).
func TestServerCommandsRefuseBadSettings(t *testing.T) {
	dir := t.TempDir()
	sec := secretFile(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"worker", "--zk", "127.0.0.1:1", "--cluster-secret-file", sec, "--slots", "-3"}, "Slots -3"},
		{[]string{"worker", "--zk", "127.0.0.1:1", "--cluster-secret-file", sec, "--shell", "zsh"}, "zsh"},
		{[]string{"worker", "--zk", "127.0.0.1:1", "--cluster-secret-file", sec, "--max-cpu-percent", "150"}, "MaxCPUPercent 150: want 0 (off) to 100"},
		{[]string{"worker", "--zk", "127.0.0.1:1", "--cluster-secret-file", sec, "--max-memory-percent", "-1"}, "MaxMemoryPercent -1"},
		{[]string{"master", "--zk", "127.0.0.1:1", "--cluster-secret-file", sec}, "--db is required"},
		{[]string{"master", "--zk", "127.0.0.1:1", "--cluster-secret-file", sec, "--db", "oracle://x/y"}, "postgres:// or sqlite://"},
		{[]string{"master", "--zk", "127.0.0.1:1", "--cluster-secret-file", sec, "--db", "sqlite://" + dir + "/b.db", "--selector", "fastest"}, "fastest"},
		{[]string{"standalone", "--data-dir", dir, "--listen", "nonsense"}, "nonsense"},
		{[]string{"standalone", "--data-dir", dir, "--db", "oracle://x/y"}, "postgres:// or sqlite://"},
		{[]string{"standalone", "--data-dir", dir, "--slots", "x"}, "invalid argument"},
		{[]string{"standalone", "--data-dir", dir, "--allowed-hosts", "ok.example,http://beluga.example.com/"}, `"http://beluga.example.com/"`},
		{[]string{"api", "--zk", "127.0.0.1:1", "--cluster-secret-file", sec, "--db", "sqlite://" + dir + "/b.db", "--allowed-hosts", "*.example.com"}, "api.allowed_hosts"},
		{[]string{"api", "--zk", "127.0.0.1:1", "--cluster-secret-file", sec, "--db", "sqlite://" + dir + "/b.db", "--secret-key-file", dir + "/no.key"}, "secret key file"},
		{[]string{"worker", "--zk", "127.0.0.1:1", "--cluster-secret-file", sec, "--secret-key-file", dir + "/no.key"}, "secret key file"},
		{[]string{"standalone", "--data-dir", dir, "--secret-key-file", dir + "/no.key"}, "secret key file"},
	} {
		var out, errb bytes.Buffer
		code := run(tc.args, &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), tc.want) {
			t.Fatalf("beluga %v: exit %d, stderr %q; want exit 2 naming %q", tc.args, code, errb.String(), tc.want)
		}
	}
}
