// Package schema embeds the versioned SQL schema files, one folder per dialect
// (mysql, postgres, sqlite) holding the same tables, and the same version
// numbers (a file with nothing to do in one dialect is there, comments only). Files are named NNNN_name.sql and
// applied in order by common/store.
package schema

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
)

//go:embed mysql/*.sql postgres/*.sql sqlite/*.sql
var files embed.FS

// Migration is one schema file.
type Migration struct {
	Version int
	Name    string
	SQL     string
}

// For returns the migrations of a dialect ("mysql", "postgres" or "sqlite") in order.
func For(dialect string) ([]Migration, error) {
	entries, err := fs.ReadDir(files, dialect)
	if err != nil {
		return nil, fmt.Errorf("schema for dialect %q: %w", dialect, err)
	}
	var out []Migration
	for _, e := range entries {
		num, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil {
			return nil, fmt.Errorf("schema file %s/%s: name must start with a version number", dialect, e.Name())
		}
		b, err := files.ReadFile(dialect + "/" + e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, Migration{Version: v, Name: e.Name(), SQL: string(b)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Version < out[j].Version })
	return out, nil
}

// Statements splits a schema file into statements on ";" at line ends and
// drops comment-only lines.
func Statements(sql string) []string {
	var out []string
	var cur strings.Builder
	for _, line := range strings.Split(sql, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || strings.HasPrefix(t, "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(t, ";") {
			out = append(out, strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"))
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		out = append(out, s)
	}
	return out
}
