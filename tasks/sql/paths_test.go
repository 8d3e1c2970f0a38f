package sql

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A SQLite datasource file in a protected dir is refused, also through a
// symbolic link; a file beside it is not.
func TestCheckSQLitePath(t *testing.T) {
	data, other := t.TempDir(), t.TempDir()
	link := filepath.Join(other, "link")
	if err := os.Symlink(data, link); err != nil {
		t.Fatal(err)
	}
	protected := protectedPaths(data + string(os.PathListSeparator) + "")
	for path, refused := range map[string]bool{
		filepath.Join(data, "beluga.db"):          true,
		data:                                      true,
		filepath.Join(data, "sub", "x.db"):        true,
		filepath.Join(link, "beluga.db"):          true,
		filepath.Join(other, "wh.db"):             false,
		filepath.Join(data+"-sibling", "wh.db"):   false,
		filepath.Join(data, "..", "elsewhere.db"): false,
	} {
		if err := checkSQLitePath(path, protected); (err != nil) != refused {
			t.Errorf("%s: %v, refused want %v", path, err, refused)
		}
	}
}

// A sql task on a SQLite datasource can attach no other database: ATTACH
// in any spelling, and VACUUM INTO, fail in the engine; its own file works.
func TestSQLiteAttachesNothing(t *testing.T) {
	tg := sqliteTarget(t)
	other := filepath.Join(t.TempDir(), "other.db")
	if out, log := tg.runTask(t, context.Background(), `{"sql": "CREATE TABLE t (x INT)"}`, nil); out.Err != nil {
		t.Fatalf("own file: %v\n%s", out.Err, log)
	}
	for _, stmt := range []string{
		"ATTACH DATABASE '" + other + "' AS o",
		"attach 'file:" + other + "?mode=rwc' as o",
		"VACUUM INTO '" + other + "'",
	} {
		b, _ := json.Marshal(map[string]string{"sql": stmt})
		out, log := tg.runTask(t, context.Background(), string(b), nil)
		if out.Err == nil || !strings.Contains(out.Err.Error(), "too many attached databases") {
			t.Errorf("%s: %v\n%s", stmt, out.Err, log)
		}
	}
	if _, err := os.Stat(other); err == nil {
		t.Fatal("the other file was made")
	}
}
