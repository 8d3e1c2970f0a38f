package sql

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ProtectedPathsConfig is the tasktype.Job.Config key of the worker's
// paths no datasource may open: its data dir, key file and the server's
// own dirs, joined by os.PathListSeparator.
const ProtectedPathsConfig = "protected_paths"

// checkSQLitePath refuses a SQLite datasource file that is, or is inside,
// one of protected (each compared with symbolic links resolved): the
// server's DB file, secrets and other tasks' files live there.
func checkSQLitePath(file string, protected []string) error {
	real := realPath(file)
	for _, p := range protected {
		if p == "" {
			continue
		}
		if inside(real, realPath(p)) || inside(filepath.Clean(file), filepath.Clean(p)) {
			return fmt.Errorf("sqlite datasource file %s is inside %s, which holds the server's own files; an admin must move the datasource elsewhere", file, p)
		}
	}
	return nil
}

func protectedPaths(cfg string) []string {
	if cfg == "" {
		return nil
	}
	return strings.Split(cfg, string(os.PathListSeparator))
}

// realPath is path with its symbolic links resolved, as far as it exists.
func realPath(path string) string {
	path = filepath.Clean(path)
	if r, err := filepath.EvalSymlinks(path); err == nil {
		return r
	}
	dir, base := filepath.Split(path)
	if dir == "" || filepath.Clean(dir) == path {
		return path
	}
	return filepath.Join(realPath(filepath.Clean(dir)), base)
}

func inside(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
