package params

import (
	"strings"
	"testing"
)

func TestCheckName(t *testing.T) {
	t.Parallel()
	for _, n := range []string{"BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "IFS", "LD_PRELOAD", "LD_LIBRARY_PATH",
		"BASH_FUNC_x", "PATH", "HOME", "CDPATH", "GLOBIGNORE", "PROMPT_COMMAND", "PYTHONSTARTUP", "PYTHONPATH",
		"PYTHONHOME", "PYTHONWARNINGS", "GCONV_PATH", "GLIBC_TUNABLES", "PERL5OPT", "NODE_OPTIONS",
		"BELUGA_OUTPUT", "BELUGA_TASK_SCOPE", "BELUGA_PROJECT", "BELUGA_TASK_INSTANCE_ID"} {
		if err := CheckName(n); err == nil || !strings.Contains(err.Error(), `"`+n+`"`) {
			t.Errorf("%s: %v, want refused naming it", n, err)
		}
	}
	for _, n := range []string{"bizdate", "path", "home", "ld_preload", "MY_PATH", "ENVIRONMENT", "PY_VERSION", BizDate, ScheduleTime} {
		if err := CheckName(n); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
	if err := CheckName("a-b"); err == nil {
		t.Error("a-b accepted")
	}
}

// TestInputsCheckNamesTheSource: the rule at resolution names where the
// reserved name came from (an upstream's output among them).
func TestInputsCheckNamesTheSource(t *testing.T) {
	t.Parallel()
	in := TaskInputs{WorkflowParams: map[string]string{"day": "1"}, UpstreamOutputs: map[string]string{"LD_PRELOAD": "/tmp/x.so"}}
	if err := in.Check(); err == nil || !strings.Contains(err.Error(), `upstream outputs: param "LD_PRELOAD"`) {
		t.Fatalf("err = %v", err)
	}
	in = TaskInputs{RunParams: map[string]string{"BASH_ENV": "$(id)"}}
	if err := in.Check(); err == nil || !strings.Contains(err.Error(), `run params: param "BASH_ENV"`) {
		t.Fatalf("err = %v", err)
	}
	if err := (TaskInputs{TaskParams: map[string]string{"x": "1"}}).Check(); err != nil {
		t.Fatal(err)
	}
}
