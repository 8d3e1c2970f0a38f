package alert

import (
	"os"
	"strings"
	"testing"

	"github.com/beluga-scheduler/beluga/testkit/leakcheck"
)

func TestMain(m *testing.M) { os.Exit(leakcheck.Run(m)) }

func TestCheck(t *testing.T) {
	good := []struct {
		kind string
		c    Config
	}{
		{Webhook, Config{URL: "https://hooks.example.com/x", Format: "teams"}},
		{Email, Config{Host: "smtp.example.com", From: "Beluga <b@example.com>", To: []string{"ops@example.com"}, TLS: "tls"}},
		{Script, Config{Command: "logger beluga"}},
	}
	for _, g := range good {
		if err := Check(g.kind, g.c); err != nil {
			t.Errorf("%s %+v: %v", g.kind, g.c, err)
		}
	}
	bad := []struct {
		kind string
		c    Config
		want string
	}{
		{"pager", Config{}, "kind"},
		{Webhook, Config{URL: "ftp://x"}, "url"},
		{Webhook, Config{URL: "http://x", Format: "xml"}, "format"},
		{Email, Config{Host: "smtp:25", From: "a@b.c", To: []string{"a@b.c"}}, "host"},
		{Email, Config{Host: "h", From: "nobody", To: []string{"a@b.c"}}, "from"},
		{Email, Config{Host: "h", From: "a@b.c"}, "to"},
		{Email, Config{Host: "h", From: "a@b.c", To: []string{"x"}}, "to"},
		{Email, Config{Host: "h", From: "a@b.c", To: []string{"a@b.c"}, Port: 70000}, "port"},
		{Script, Config{Command: " "}, "command"},
	}
	for _, b := range bad {
		if err := Check(b.kind, b.c); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("%s %+v: %v, want an error naming %s", b.kind, b.c, err, b.want)
		}
	}
}
