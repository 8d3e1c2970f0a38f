package main

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestComposeCommands checks that every beluga command in the compose file
// is one this binary accepts (subcommand and flags), and that every
// long-running service has a health check. No Docker engine runs here, so
// this is how the file is kept true.
func TestComposeCommands(t *testing.T) {
	b, err := os.ReadFile("../../docker/docker-compose.yml")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Services map[string]struct {
			Image       string            `yaml:"image"`
			Command     []string          `yaml:"command"`
			Healthcheck map[string]any    `yaml:"healthcheck"`
			Restart     string            `yaml:"restart"`
			Environment map[string]string `yaml:"environment"`
			Ports       []string          `yaml:"ports"`
			Secrets     []string          `yaml:"secrets"`
			User        string            `yaml:"user"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("compose file: %v", err)
	}
	roles := map[string]int{}
	for name, s := range doc.Services {
		if s.Image != "beluga:dev" {
			continue
		}
		if len(s.Command) == 0 {
			t.Fatalf("service %s has no command", name)
		}
		roles[s.Command[0]]++
		var out, errb bytes.Buffer
		if code := run(append(append([]string{}, s.Command...), "--help"), &out, &errb); code != 0 {
			t.Fatalf("service %s: beluga %v refused (exit %d): %s", name, s.Command, code, errb.String())
		}
		if s.Restart != "no" && s.Healthcheck == nil {
			t.Fatalf("service %s has no health check", name)
		}
	}
	for name, s := range doc.Services {
		for k, v := range s.Environment {
			// Secrets are files: an environment variable is shown to every
			// process of the container, tasks included.
			up := strings.ToUpper(k)
			if (strings.Contains(up, "PASSWORD") || strings.Contains(up, "SECRET") || strings.Contains(up, "TOKEN") || k == "BELUGA_DB") &&
				!strings.HasSuffix(up, "_FILE") {
				t.Errorf("service %s: %s=%q is a secret in the environment; use a secret file", name, k, v)
			}
			if strings.Contains(v, "@") && strings.Contains(v, "://") {
				t.Errorf("service %s: %s holds a URL with credentials", name, k)
			}
		}
		for _, p := range s.Ports {
			if !strings.HasPrefix(p, "${BELUGA_BIND:-127.0.0.1}:") {
				t.Errorf("service %s publishes %q on every interface; bind ${BELUGA_BIND:-127.0.0.1}", name, p)
			}
		}
		if len(s.Command) > 0 && s.Command[0] == "worker" {
			for _, sec := range s.Secrets {
				if sec == "db_url" {
					t.Errorf("worker %s has the database's credentials: its tasks could read them", name)
				}
			}
			if s.Environment["BELUGA_DB_FILE"] != "" {
				t.Errorf("worker %s is given the database", name)
			}
		}
	}
	if roles["master"] != 2 || roles["worker"] != 2 || roles["api"] != 1 || roles["db"] != 1 {
		t.Fatalf("compose roles %v, want 2 masters, 2 workers, an api and a migration", roles)
	}
}
