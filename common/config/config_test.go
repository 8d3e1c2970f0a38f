package config

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestAllowedHosts(t *testing.T) {
	t.Parallel()
	noEnv := func(string) (string, bool) { return "", false }
	c, err := Load("", noEnv)
	if err != nil || c.API.AllowedHosts != nil || c.API.Listen != "127.0.0.1:12345" {
		t.Fatalf("defaults: %+v %v", c.API, err)
	}

	file := filepath.Join(t.TempDir(), "beluga.yaml")
	if err := os.WriteFile(file, []byte("api:\n  listen: 0.0.0.0:12345\n  allowed_hosts: [beluga.example.com, 10.0.0.5]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err = Load(file, noEnv)
	if err != nil || !slices.Equal(c.API.AllowedHosts, []string{"beluga.example.com", "10.0.0.5"}) {
		t.Fatalf("file: %+v %v", c.API, err)
	}

	// The environment wins over the file, comma-separated, blanks dropped.
	env := func(k string) (string, bool) {
		if k == "BELUGA_API_ALLOWED_HOSTS" {
			return " a.example, ,b.example:8080 ", true
		}
		return "", false
	}
	c, err = Load(file, env)
	if err != nil || !slices.Equal(c.API.AllowedHosts, []string{"a.example", "b.example:8080"}) || c.API.Listen != "0.0.0.0:12345" {
		t.Fatalf("env: %+v %v", c.API, err)
	}
}
