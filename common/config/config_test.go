package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
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

func TestOverloadSettings(t *testing.T) {
	t.Parallel()
	c, err := Load("", func(string) (string, bool) { return "", false })
	if err != nil || c.Worker.MaxCPUPercent != 0 || c.Worker.MaxMemoryPercent != 0 {
		t.Fatalf("defaults: %+v %v, want overload protection off", c.Worker, err)
	}
	file := filepath.Join(t.TempDir(), "beluga.yaml")
	if err := os.WriteFile(file, []byte("worker:\n  max_cpu_percent: 90\n  max_memory_percent: 80\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(k string) (string, bool) {
		if k == "BELUGA_WORKER_MAX_CPU_PERCENT" {
			return "70", true
		}
		return "", false
	}
	c, err = Load(file, env)
	if err != nil || c.Worker.MaxCPUPercent != 70 || c.Worker.MaxMemoryPercent != 80 {
		t.Fatalf("file and env: %+v %v, want cpu 70 (env), memory 80 (file)", c.Worker, err)
	}
}

func TestDBFile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	url := filepath.Join(dir, "db-url")
	if err := os.WriteFile(url, []byte("  mysql://root:pw@db/beluga\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "beluga.yaml")
	if err := os.WriteFile(file, []byte("db_file: "+url+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	noEnv := func(string) (string, bool) { return "", false }
	c, err := Load(file, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ReadDBFile(); err != nil || c.DB != "mysql://root:pw@db/beluga" {
		t.Fatalf("db %q, %v", c.DB, err)
	}
	c.DBFile = filepath.Join(dir, "empty")
	if err := os.WriteFile(c.DBFile, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c.DB = ""
	if err := c.ReadDBFile(); err == nil {
		t.Fatal("an empty db_file was accepted")
	}
}

func TestTLSSettings(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "beluga.yaml")
	if err := os.WriteFile(file, []byte("tls:\n  cert_file: /etc/b/node.crt\n  key_file: /etc/b/node.key\n  ca_file: /etc/b/ca.crt\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(k string) (string, bool) {
		if k == "BELUGA_TLS_CA_FILE" {
			return "/env/ca.crt", true
		}
		return "", false
	}
	c, err := Load(file, env)
	want := TLSConfig{CertFile: "/etc/b/node.crt", KeyFile: "/etc/b/node.key", CAFile: "/env/ca.crt"}
	if err != nil || c.TLS != want || !c.TLS.Enabled() || c.TLS.Check() != nil {
		t.Fatalf("tls from file and env: %+v %v", c.TLS, err)
	}
	for _, tc := range []struct {
		cfg  TLSConfig
		want string // "" : valid
	}{
		{TLSConfig{}, ""},
		{want, ""},
		{TLSConfig{CertFile: "a"}, "missing --tls-key (BELUGA_TLS_KEY_FILE, tls.key_file) and --tls-ca (BELUGA_TLS_CA_FILE, tls.ca_file)"},
		{TLSConfig{CertFile: "a", KeyFile: "b"}, "missing --tls-ca (BELUGA_TLS_CA_FILE, tls.ca_file)"},
		{TLSConfig{CAFile: "c"}, "missing --tls-cert"},
	} {
		err := tc.cfg.Check()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("Check(%+v) = %v, want %q", tc.cfg, err, tc.want)
		}
	}
}
