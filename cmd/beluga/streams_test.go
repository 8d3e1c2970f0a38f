package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestTaskLogStreamFlag: against a real standalone, `beluga task log`
// prints a task's stdout and stderr interleaved as before, and --stream
// prints one of them; a bad --stream is a usage error naming the choices.
func TestTaskLogStreamFlag(t *testing.T) {
	bin := buildBeluga(t)
	dir := filepath.Join(t.TempDir(), "data")
	_, base := serving(t, bin, dir)
	api := "http://" + base + "/api/v1"
	call(t, "POST", api+"/projects", `{"name":"demo"}`, http.StatusCreated)
	// w waits until the log holds its text, so that the next print is
	// surely later than the last one reached the worker.
	logf := filepath.Join(dir, "worker", "logs") + `/$BELUGA_WORKFLOW_INSTANCE_ID/$BELUGA_TASK_INSTANCE_ID.log`
	script := `w() { until grep -qF -- "$1" "` + logf + `"; do sleep 0.01; done; }; ` +
		`echo step one; w 'step one'; echo warning: disk low >&2; w warning; echo step two`
	call(t, "PUT", api+"/projects/demo/workflows/mixed", fmt.Sprintf("name: mixed\ntasks:\n  - {name: s, command: %q}\n", script), http.StatusCreated)
	var run struct {
		ID int64 `json:"id"`
	}
	if err := json.Unmarshal([]byte(call(t, "POST", api+"/projects/demo/workflows/mixed/runs", `{}`, http.StatusCreated)), &run); err != nil {
		t.Fatal(err)
	}
	var inst struct {
		State string
		Tasks []struct{ ID int64 }
	}
	wait.UntilErr(t, 60*time.Second, "the run to succeed", func() error {
		if err := json.Unmarshal([]byte(call(t, "GET", fmt.Sprintf("%s/instances/%d", api, run.ID), "", http.StatusOK)), &inst); err != nil {
			t.Fatal(err)
		}
		if inst.State != "succeeded" {
			return fmt.Errorf("%+v", inst)
		}
		return nil
	})
	tok, _ := tokens.Load(base)
	cli := func(args ...string) (int, string, string) {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "BELUGA_SERVER=http://"+base, "BELUGA_TOKEN="+tok.(string))
		var out, errb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &errb
		err := cmd.Run()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return code, out.String(), errb.String()
	}
	id := fmt.Sprint(inst.Tasks[0].ID)
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "step one\nwarning: disk low\nstep two\n"},
		{[]string{"--stream", "stdout"}, "step one\nstep two\n"},
		{[]string{"--stream", "stderr"}, "warning: disk low\n"},
	} {
		code, out, errs := cli(append([]string{"task", "log", id}, c.args...)...)
		if code != 0 || out != c.want {
			t.Fatalf("beluga task log %s %v: exit %d, %q (stderr %q), want %q", id, c.args, code, out, errs, c.want)
		}
	}
	if code, _, errs := cli("task", "log", id, "--stream", "both"); code != 2 || !strings.Contains(errs, `--stream "both": want all, stdout or stderr`) {
		t.Fatalf("a bad --stream: exit %d, %q", code, errs)
	}
}
