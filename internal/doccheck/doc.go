// Package doccheck holds the test that keeps docs/architecture.md,
// docs/extending.md and docs/adding-a-dialect.md honest: what they write in
// backticks that names something of the repository must exist: Go names
// (pkg.Name, Type.Member, store.(*Store).method, a mixed-case name), files
// (dir/file.go), routes of api/api.go, settings of common/config, flags of
// cmd/beluga and crash points of common/failpoint; and the sections of
// docs/architecture.md that code comments and docs cite by name must exist.
// It has no code of its own.
package doccheck
