package api

// The name rules of common/spec (its validName and validEnvName are
// unexported), repeated so projects and run params follow the same rules as
// the names and params inside a spec.

const nameRule = "use 1 to 128 ASCII letters, digits, '_', '-' or '.'"

// validName: ASCII letters, digits, '_', '-', '.', at most 128 bytes, not
// "." or "..", so names are safe as path and file components.
func validName(s string) bool {
	if s == "" || len(s) > 128 || s == "." || s == ".." {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(isLetter(c) || isDigit(c) || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

// validEnvName: params reach tasks as environment variables.
func validEnvName(s string) bool {
	if s == "" || isDigit(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(isLetter(c) || isDigit(c) || c == '_') {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
