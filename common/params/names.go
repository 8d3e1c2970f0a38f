package params

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Params reach a task as environment variables, and some variables are
// read as code or change what runs: by the shell (BASH_ENV, ENV,
// PROMPT_COMMAND, exported BASH_FUNC_*), by the dynamic loader and libc
// (LD_PRELOAD, GCONV_PATH, GLIBC_TUNABLES), by interpreters a task calls
// (PYTHONSTARTUP, PERL5OPT, NODE_OPTIONS), or they change where commands
// and files are found (PATH, HOME, CDPATH). A param may not carry one of
// these names: the rule below is checked where a param is accepted (spec
// validation, run, schedule and backfill requests) and again where a
// task's params are resolved, so a value stored before the rule, an
// upstream's output or a parent's sub_workflow params cannot bring one in.

// reservedNames are refused as they are.
var reservedNames = []string{
	"ENV", "SHELLOPTS", "IFS", "PS1", "PS2", "PS3", "PS4", "PATH", "HOME", "CDPATH",
	"GLOBIGNORE", "PROMPT_COMMAND", "POSIXLY_CORRECT", "SHELL",
	"GCONV_PATH", "GLIBC_TUNABLES", "LOCPATH", "NLSPATH", "HOSTALIASES", "RESOLV_HOST_CONF",
	"PERL5OPT", "PERL5LIB", "PERLLIB", "RUBYOPT", "RUBYLIB", "NODE_OPTIONS", "NODE_PATH",
	"JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH",
}

// reservedPrefixes are refused with anything after them: bash's own
// variables (BASH_ENV, BASHOPTS, BASH_FUNC_*, BASH_XTRACEFD), the loader's,
// every Python startup variable (PYTHONSTARTUP, PYTHONPATH, PYTHONHOME,
// PYTHONWARNINGS, ...) and Beluga's.
var reservedPrefixes = []string{"BASH", "LD_", "PYTHON", "BELUGA_"}

// overridable are the BELUGA_* dates a run may set on purpose (a rerun of
// a given day): they are data the task reads, not something the worker or
// the task's identity depends on.
var overridable = []string{ScheduleTime, BizDate, CurDate, DateTime}

// CheckName says why name cannot be a param, or nil: it must be an
// identifier and not a name reserved above.
func CheckName(name string) error {
	if !isParamName(name) {
		return fmt.Errorf("param %q: a param name must be a valid environment variable name ([A-Za-z_][A-Za-z0-9_]*)", name)
	}
	if slices.Contains(overridable, name) {
		return nil
	}
	if slices.Contains(reservedNames, name) {
		return fmt.Errorf("param %q: the name is reserved: it changes how a shell, the loader or an interpreter runs the task (see docs/security.md, params)", name)
	}
	for _, p := range reservedPrefixes {
		if strings.HasPrefix(name, p) {
			return fmt.Errorf("param %q: names starting %s are reserved: they change how a shell, the loader or an interpreter runs the task, or are Beluga's own (see docs/security.md, params)", name, p)
		}
	}
	return nil
}

// CheckNames checks the names of a param map; the error names the first
// bad one in name order.
func CheckNames(ps map[string]string) error {
	for _, k := range slices.Sorted(maps.Keys(ps)) {
		if err := CheckName(k); err != nil {
			return err
		}
	}
	return nil
}

// Check is the rule at resolution: every source of in's params, upstream
// outputs among them, holds only names CheckName accepts. The error names
// the source and the param.
func (in TaskInputs) Check() error {
	for _, src := range []struct {
		what string
		ps   map[string]string
	}{{"workflow params", in.WorkflowParams}, {"task params", in.TaskParams}, {"run params", in.RunParams},
		{"upstream outputs", in.UpstreamOutputs}} {
		if err := CheckNames(src.ps); err != nil {
			return fmt.Errorf("%s: %w", src.what, err)
		}
	}
	return nil
}
