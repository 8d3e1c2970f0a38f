package store_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/master"
)

// TestConformanceCoversTheInterfaces fails when a method of the store
// interfaces the master and the API declare has no conformance case: no
// call of it on a *store.Store inside a test that runs on every dialect (a
// function given to each, or a helper taking a *store.Store). It reads the
// package's test files, so a new interface method needs a case here first.
func TestConformanceCoversTheInterfaces(t *testing.T) {
	want := map[string][]string{} // method -> interfaces that declare it
	for _, it := range []reflect.Type{
		reflect.TypeFor[master.Store[*store.Store]](),
		reflect.TypeFor[master.TermStore](),
		reflect.TypeFor[api.Store](),
	} {
		for m := range it.Methods() {
			want[m.Name] = append(want[m.Name], it.String())
		}
	}
	called := conformanceCalls(t)
	if len(called) == 0 {
		t.Fatal("no store calls found in the conformance cases: the scan is broken")
	}
	var missing []string
	for name, in := range want {
		if !called[name] {
			missing = append(missing, name+" (in "+in[0]+")")
		}
	}
	slices.Sort(missing)
	for _, m := range missing {
		t.Errorf("no conformance case calls %s", m)
	}
}

// conformanceCalls returns the names of the methods called on a store value
// in this package's tests that run on every dialect.
func conformanceCalls(t *testing.T) map[string]bool {
	t.Helper()
	files, err := filepath.Glob("*_test.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	called := map[string]bool{}
	for _, name := range files {
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			var ft *ast.FuncType
			var body *ast.BlockStmt
			switch n := n.(type) {
			case *ast.CallExpr: // each(t, func(t *testing.T, s *store.Store) {...})
				if id, ok := n.Fun.(*ast.Ident); !ok || id.Name != "each" || len(n.Args) != 2 {
					return true
				}
				lit, ok := n.Args[1].(*ast.FuncLit)
				if !ok {
					return true
				}
				ft, body = lit.Type, lit.Body
			case *ast.FuncDecl: // a helper taking a *store.Store
				ft, body = n.Type, n.Body
			default:
				return true
			}
			vars := storeParams(ft)
			if len(vars) == 0 || body == nil {
				return true
			}
			collectCalls(body, vars, called)
			return true
		})
	}
	return called
}

// storeParams returns the names of a function's *store.Store parameters.
func storeParams(ft *ast.FuncType) map[string]bool {
	vars := map[string]bool{}
	for _, p := range ft.Params.List {
		star, ok := p.Type.(*ast.StarExpr)
		if !ok {
			continue
		}
		sel, ok := star.X.(*ast.SelectorExpr)
		if !ok || sel.Sel.Name != "Store" {
			continue
		}
		if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "store" {
			continue
		}
		for _, n := range p.Names {
			vars[n.Name] = true
		}
	}
	return vars
}

// collectCalls records every method called on a store variable or on a view
// made from one (s.Term(2).FireSchedules, or v := s.Term(2); v.X), in
// source order so that a view is known before its calls.
func collectCalls(body *ast.BlockStmt, vars map[string]bool, called map[string]bool) {
	ast.Inspect(body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			if len(n.Lhs) == 1 && len(n.Rhs) == 1 && rooted(n.Rhs[0], vars) {
				if id, ok := n.Lhs[0].(*ast.Ident); ok {
					vars[id.Name] = true
				}
			}
		case *ast.CallExpr:
			if sel, ok := n.Fun.(*ast.SelectorExpr); ok && rooted(sel.X, vars) {
				called[sel.Sel.Name] = true
			}
		}
		return true
	})
}

// rooted says whether e is a store variable or a call chain starting at one.
func rooted(e ast.Expr, vars map[string]bool) bool {
	for {
		switch x := e.(type) {
		case *ast.Ident:
			return vars[x.Name]
		case *ast.CallExpr:
			e = x.Fun
		case *ast.SelectorExpr:
			e = x.X
		default:
			return false
		}
	}
}
