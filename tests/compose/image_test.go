//go:build compose

package compose

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
)

// TestImage checks what beluga:dev holds (built by make compose-test from
// this checkout): python3 for python tasks, the unprivileged task user, the
// servers' own user by default, no build tools, a health check, a size that
// says nothing extra came along.
func TestImage(t *testing.T) {
	sh := func(user, script string) (string, error) {
		out, err := exec.Command("docker", "run", "--rm", "--user", user, "--entrypoint", "bash", "beluga:dev", "-c", script).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if out, err := sh("", `python3 -c 'import json, sys; print(json.dumps(sys.version_info[0]))'`); err != nil || out != "3" {
		t.Fatalf("python3 in the image: %q %v", out, err)
	}
	if out, err := sh("", "id -u; id -u beluga-task; stat -c %a /var/lib/beluga"); err != nil || out != "10001\n10002\n711" {
		t.Fatalf("users and data dir: %q %v (want the servers as 10001, beluga-task 10002, data dir 0711)", out, err)
	}
	if out, _ := sh("", "command -v go gcc cc make apt-get >/dev/null; for c in go gcc cc make; do command -v $c; done; ls /var/lib/apt/lists | grep -v -e lock -e partial"); out != "" {
		t.Fatalf("build tools or package lists in the image: %q", out)
	}
	out, err := exec.Command("docker", "image", "inspect", "-f", "{{.Size}} {{json .Config.Healthcheck.Test}}", "beluga:dev").Output()
	if err != nil {
		t.Fatal(err)
	}
	f := strings.SplitN(strings.TrimSpace(string(out)), " ", 2)
	size, _ := strconv.ParseInt(f[0], 10, 64)
	if !strings.Contains(f[1], "healthcheck") {
		t.Fatalf("HEALTHCHECK %s, want beluga healthcheck", f[1])
	}
	// debian minbase ~106 MB, python3 ~30 MB, the binary ~40 MB.
	if size > 260e6 {
		t.Fatalf("beluga:dev is %d MB", size/1e6)
	}
	t.Logf("beluga:dev: %d MB, health check %s", size/1e6, f[1])
}
