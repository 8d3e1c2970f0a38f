package store

import (
	"errors"
	"strings"
	"testing"
)

func TestRedactURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"mysql://root:hunter2@db:3306/beluga":     "mysql://root:xxxxx@db:3306/beluga",
		"mysql://root:hun@ter:2@db/beluga?x=1":    "mysql://root:xxxxx@db/beluga?x=1",
		"mysql://root:hunter2%zz@db/beluga":       "mysql://root:xxxxx@db/beluga",
		"mysql://root@db:3306/beluga":             "mysql://root@db:3306/beluga",
		"mysql://db:3306/beluga":                  "mysql://db:3306/beluga",
		"sqlite:///var/lib/beluga/beluga.db":      "sqlite:///var/lib/beluga/beluga.db",
		"mysql://root:p/w?d@db/beluga":            "mysql://root:xxxxx@db/beluga",
		"not a url root:hunter2@db":               "not a url root:hunter2@db",
		"mysql://:hunter2@db/beluga":              "mysql://:xxxxx@db/beluga",
		"mysql://root:hunter2@db/b?tls=a@b.local": "mysql://root:xxxxx@b.local",
	} {
		if got := RedactURL(in); got != want {
			t.Errorf("RedactURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRedactErrKeepsChain(t *testing.T) {
	t.Parallel()
	base := errors.New("access denied for hunter2 and hunter2!")
	err := redactErr(base, "mysql://root:hunter%32@db/beluga")
	if strings.Contains(err.Error(), "hunter2") || !errors.Is(err, base) {
		t.Fatalf("err = %v (is base: %v)", err, errors.Is(err, base))
	}
}
