package doccheck

import (
	"go/ast"
	"go/parser"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

const testkitPath = "github.com/beluga-scheduler/beluga/testkit/"

// productImportsTestkit says whether the file at rel (from the repository
// root, slash-separated) is product code importing imp from testkit/: test
// files, the kits themselves, tests/ and bench/ may; the rest is what the
// binary is built from and must not (docs/architecture.md, "Packages").
func productImportsTestkit(rel, imp string) bool {
	if !strings.HasPrefix(imp, testkitPath) || strings.HasSuffix(rel, "_test.go") {
		return false
	}
	for _, free := range []string{"testkit/", "tests/", "bench/"} {
		if strings.HasPrefix(rel, free) {
			return false
		}
	}
	return true
}

func TestProductImportsTestkitDecides(t *testing.T) {
	kit := testkitPath + "wait"
	for _, tc := range []struct {
		rel, imp string
		want     bool
	}{
		{"master/master.go", kit, true},
		{"internal/wftest/engine.go", kit, true},
		{"master/master_test.go", kit, false},
		{"testkit/clustertest/cluster.go", testkitPath + "zktest", false},
		{"tests/soak/soak.go", kit, false},
		{"bench/benchkit/benchkit.go", testkitPath + "freeport", false},
		{"master/master.go", "github.com/beluga-scheduler/beluga/internal/startstop", false},
		{"master/master.go", "github.com/beluga-scheduler/beluga/testkitx/y", false},
	} {
		if got := productImportsTestkit(tc.rel, tc.imp); got != tc.want {
			t.Errorf("productImportsTestkit(%q, %q) = %v, want %v", tc.rel, tc.imp, got, tc.want)
		}
	}
}

// The binary never depends on test kits: they start servers, read
// environment knobs and fail tests, none of which belongs in a release.
func TestProductImportsNoTestkit(t *testing.T) {
	r := root(t)
	files := 0
	err := eachGoFile(r, parser.ImportsOnly, func(rel string, f *ast.File) {
		files++
		rel = filepath.ToSlash(rel)
		for _, is := range f.Imports {
			imp, _ := strconv.Unquote(is.Path.Value)
			if productImportsTestkit(rel, imp) {
				t.Errorf("%s imports %s: test kits are for tests and benchmarks only", rel, imp)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatal("no Go file found: is the root right?")
	}
}
