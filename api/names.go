package api

import "github.com/beluga-scheduler/beluga/common/spec"

// Projects, groups and run params follow the same name rules as the names
// and params inside a spec.

const nameRule = "use 1 to 128 ASCII letters, digits, '_', '-' or '.'"

func validName(s string) bool    { return spec.ValidName(s) }
func validEnvName(s string) bool { return spec.ValidEnvName(s) }
