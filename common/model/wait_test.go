package model

import "testing"

// The dispatcher's reasons read back as the cause and group they name.
func TestParseDispatchWait(t *testing.T) {
	for _, c := range []struct {
		reason string
		cause  WaitCause
		key    string
		ok     bool
	}{
		{WaitPlatformReason(10), WaitPlatform, "", true},
		{WaitTaskGroupReason("db", 2, 2), WaitTaskGroup, "db", true},
		{WaitTaskGroupReason("gone", 0, -1), WaitTaskGroup, "gone", true},
		{WaitTaskGroupReason(`we"ird`, 1, 1), WaitTaskGroup, `we"ird`, true},
		{WaitNoWorkerReason("gpu"), WaitNoWorker, "gpu", true},
		{WaitBusyReason("etl", "1 full, 2 overloaded"), WaitWorkersBusy, "etl", true},
		{"task a failed", "", "", false},
		{"", "", "", false},
		{"waiting for task group unquoted", WaitTaskGroup, "", true},
	} {
		cause, key, ok := ParseDispatchWait(c.reason)
		if cause != c.cause || key != c.key || ok != c.ok {
			t.Errorf("ParseDispatchWait(%q) = %q %q %v, want %q %q %v", c.reason, cause, key, ok, c.cause, c.key, c.ok)
		}
	}
}
