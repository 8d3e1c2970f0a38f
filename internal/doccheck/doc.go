// Package doccheck holds the test that keeps docs/architecture.md and
// docs/extending.md honest: every Go name and repository file they write in
// backticks must exist. It has no code of its own.
package doccheck
