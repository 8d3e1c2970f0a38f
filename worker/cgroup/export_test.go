package cgroup

import "testing"

// AutoBase is autoBase, for the external tests.
var AutoBase = autoBase

// SetNoKillFile makes Kill skip cgroup.kill for the test's duration.
func SetNoKillFile(t *testing.T, on bool) {
	old := noKillFile
	noKillFile = on
	t.Cleanup(func() { noKillFile = old })
}
