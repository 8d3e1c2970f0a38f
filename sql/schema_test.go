package schema

import (
	"io/fs"
	"slices"
	"testing"
)

// TestDialectsHaveTheSameVersions fails when a migration number exists in
// one dialect's folder and not in another's: every dialect must reach the
// same schema by the same steps (a step with nothing to do in one dialect
// is a comments-only file there).
func TestDialectsHaveTheSameVersions(t *testing.T) {
	dirs, err := fs.ReadDir(files, ".")
	if err != nil {
		t.Fatal(err)
	}
	versions := map[string][]int{}
	for _, d := range dirs {
		migs, err := For(d.Name())
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range migs {
			versions[d.Name()] = append(versions[d.Name()], m.Version)
		}
	}
	if len(versions) < 3 {
		t.Fatalf("dialects %v, want mysql, postgres and sqlite at least", versions)
	}
	all := map[int]bool{}
	for _, vs := range versions {
		for _, v := range vs {
			all[v] = true
		}
	}
	for name, vs := range versions {
		for v := range all {
			if !slices.Contains(vs, v) {
				t.Errorf("migration %04d exists in another dialect but not in sql/%s", v, name)
			}
		}
		for i := 1; i < len(vs); i++ {
			if vs[i] == vs[i-1] {
				t.Errorf("sql/%s has two migrations numbered %04d", name, vs[i])
			}
		}
	}
}

func TestForUnknownDialect(t *testing.T) {
	if _, err := For("oracle"); err == nil {
		t.Fatal("For(oracle): no error")
	}
}
