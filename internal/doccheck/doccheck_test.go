package doccheck

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// docs are the pages checked, relative to the repository root.
var docs = []string{"docs/architecture.md", "docs/extending.md", "docs/adding-a-dialect.md"}

// notGo are mixed-case names the docs write in backticks that are not Go
// names of this repository (another program's settings).
var notGo = map[string]bool{
	"maxSessionTimeout": true, // ZooKeeper's server setting
}

// decls is what the repository's Go files declare.
type decls struct {
	pkgs    map[string]map[string]bool // package name -> top-level names
	methods map[string]map[string]bool // package name -> methods of its types
	members map[string]map[string]bool // type name -> fields and methods (any package)
	types   map[string]bool
	all     map[string]bool // every declared name: top-level, members, test functions
	routes  map[string]bool // "METHOD /pattern" of api/api.go's route table
	// config: each section of common/config's Config (its yaml tag) -> the
	// yaml tags of its fields
	config  map[string]map[string]bool
	cliStrs map[string]bool // string literals of cmd/beluga (flag names)
	points  map[string]bool // common/failpoint's point names
}

func (d *decls) add(set map[string]map[string]bool, key, name string) {
	if set[key] == nil {
		set[key] = map[string]bool{}
	}
	set[key][name] = true
	d.all[name] = true
}

// eachGoFile parses every Go file under root (skipping web/, node_modules,
// testdata and hidden dirs) and hands it to fn with its path from root.
func eachGoFile(root string, mode parser.Mode, fn func(rel string, f *ast.File)) error {
	fset := token.NewFileSet()
	return filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if n := e.Name(); path != root && (strings.HasPrefix(n, ".") || n == "web" || n == "node_modules" || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, mode)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		fn(rel, f)
		return nil
	})
}

// scan parses every Go file under root (skipping web/ and hidden dirs).
func scan(t *testing.T, root string) *decls {
	d := &decls{pkgs: map[string]map[string]bool{}, methods: map[string]map[string]bool{}, members: map[string]map[string]bool{},
		types: map[string]bool{}, all: map[string]bool{}, routes: map[string]bool{},
		config: map[string]map[string]bool{}, cliStrs: map[string]bool{}, points: map[string]bool{}}
	configTypes := map[string]map[string]bool{} // struct type -> yaml tags
	sectionType := map[string]string{}          // Config's yaml tag -> field type
	err := eachGoFile(root, parser.SkipObjectResolution, func(rel string, f *ast.File) {
		pkg := strings.TrimSuffix(f.Name.Name, "_test")
		dir, test := filepath.Dir(rel), strings.HasSuffix(rel, "_test.go")
		switch {
		case rel == filepath.Join("api", "api.go"):
			d.addRoutes(f)
		case dir == filepath.Join("common", "config") && !test:
			addConfig(f, configTypes, sectionType)
		case dir == filepath.Join("cmd", "beluga") && !test:
			addStrings(f, d.cliStrs)
		case dir == filepath.Join("common", "failpoint") && !test:
			addStrings(f, d.points)
		}
		for _, decl := range f.Decls {
			switch x := decl.(type) {
			case *ast.FuncDecl:
				if x.Recv != nil && len(x.Recv.List) == 1 {
					d.add(d.members, recvName(x.Recv.List[0].Type), x.Name.Name)
					d.add(d.methods, pkg, x.Name.Name)
				} else {
					d.add(d.pkgs, pkg, x.Name.Name)
				}
			case *ast.GenDecl:
				for _, s := range x.Specs {
					switch s := s.(type) {
					case *ast.TypeSpec:
						d.add(d.pkgs, pkg, s.Name.Name)
						d.types[s.Name.Name] = true
						d.addMembers(s.Name.Name, s.Type)
					case *ast.ValueSpec:
						for _, n := range s.Names {
							d.add(d.pkgs, pkg, n.Name)
						}
					}
				}
			}
		}
	})
	if err != nil {
		t.Fatalf("scanning the Go files: %v", err)
	}
	for section, typ := range sectionType {
		if tags := configTypes[typ]; tags != nil {
			d.config[section] = tags
		}
	}
	if len(d.config) == 0 || len(d.cliStrs) == 0 || len(d.points) == 0 {
		t.Fatalf("found no config sections (%d), CLI strings (%d) or failpoints (%d): has the code moved?",
			len(d.config), len(d.cliStrs), len(d.points))
	}
	return d
}

// addConfig records the yaml tags of common/config's structs, and which
// struct each section of Config is.
func addConfig(f *ast.File, types map[string]map[string]bool, sections map[string]string) {
	yamlTag := regexp.MustCompile(`yaml:"([a-z_]+)`)
	for _, decl := range f.Decls {
		g, ok := decl.(*ast.GenDecl)
		if !ok {
			continue
		}
		for _, sp := range g.Specs {
			ts, ok := sp.(*ast.TypeSpec)
			if !ok {
				continue
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				continue
			}
			tags := map[string]bool{}
			for _, fl := range st.Fields.List {
				if fl.Tag == nil {
					continue
				}
				m := yamlTag.FindStringSubmatch(fl.Tag.Value)
				if m == nil {
					continue
				}
				tags[m[1]] = true
				if id, ok := fl.Type.(*ast.Ident); ok && ts.Name.Name == "Config" {
					sections[m[1]] = id.Name
				}
			}
			types[ts.Name.Name] = tags
		}
	}
}

// addStrings records f's string literals.
func addStrings(f *ast.File, into map[string]bool) {
	ast.Inspect(f, func(n ast.Node) bool {
		if b, ok := n.(*ast.BasicLit); ok && b.Kind == token.STRING {
			into[strings.Trim(b.Value, "`\"")] = true
		}
		return true
	})
}

// addRoutes reads the route table of api/api.go: {"GET", "/path", handler}.
func (d *decls) addRoutes(f *ast.File) {
	ast.Inspect(f, func(n ast.Node) bool {
		c, ok := n.(*ast.CompositeLit)
		if !ok || len(c.Elts) != 3 {
			return true
		}
		m, ok1 := c.Elts[0].(*ast.BasicLit)
		p, ok2 := c.Elts[1].(*ast.BasicLit)
		if ok1 && ok2 && m.Kind == token.STRING && p.Kind == token.STRING {
			d.routes[strings.Trim(m.Value, `"`)+" "+strings.Trim(p.Value, `"`)] = true
		}
		return true
	})
}

func (d *decls) addMembers(typ string, e ast.Expr) {
	var fields *ast.FieldList
	switch x := e.(type) {
	case *ast.StructType:
		fields = x.Fields
	case *ast.InterfaceType:
		fields = x.Methods
	default:
		return
	}
	for _, f := range fields.List {
		for _, n := range f.Names {
			d.add(d.members, typ, n.Name)
		}
		if len(f.Names) == 0 { // embedded: its name is a member too
			d.add(d.members, typ, recvName(f.Type))
		}
	}
}

// recvName is the type name of a receiver or embedded field: T, *T, T[X], pkg.T.
func recvName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return recvName(x.X)
	case *ast.IndexExpr:
		return recvName(x.X)
	case *ast.IndexListExpr:
		return recvName(x.X)
	case *ast.SelectorExpr:
		return x.Sel.Name
	case *ast.Ident:
		return x.Name
	}
	return ""
}

var (
	backticked = regexp.MustCompile("`([^`\n]+)`")
	// a repository path: dir/file.ext (globs allowed)
	pathRe = regexp.MustCompile(`^[a-z][\w.*/-]*/[\w.*-]+\.(go|ts|tsx|yaml|sql|md)$`)
	// qualified: pkg.Name, Type.Name, pkg.Type.Name, store.(*Store).name, with an optional ()
	qualRe = regexp.MustCompile(`^([A-Za-z]\w*)\.(?:\(\*?([A-Za-z]\w*)\)\.)?([A-Za-z]\w*)(?:\.([A-Za-z]\w*))?(?:\(\))?$`)
	// a setting: section.key (worker.python)
	settingRe = regexp.MustCompile(`^([a-z]+)\.([a-z_]+)$`)
	// a command-line flag
	flagRe = regexp.MustCompile(`^--([a-z][a-z0-9-]*)$`)
	// a crash point, with its hit count
	pointRe = regexp.MustCompile(`^((?:before|after)-[a-z-]+)(@\d+)?$`)
	// a file name without its directory
	fileRe = regexp.MustCompile(`^[\w.*-]+\.(go|ts|tsx|yaml|sql|md|json)$`)
	// a REST route: GET /api/v1/instances/{id}?wait=30s
	routeRe = regexp.MustCompile(`^(GET|POST|PUT|PATCH|DELETE) (/[^?\s]*)(\?\S*)?$`)
	// a bare Go name in mixed case: fooBar, FooBar (not SQL, env vars or words)
	bareRe = regexp.MustCompile(`^[A-Za-z]\w*$`)
)

func mixedCase(s string) bool {
	return strings.ContainsAny(s, "abcdefghijklmnopqrstuvwxyz") && strings.ContainsAny(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
}

// problems lists the backticked names and paths of text that do not exist.
func problems(root string, d *decls, text string) []string {
	var out []string
	seen := map[string]bool{}
	for _, m := range backticked.FindAllStringSubmatch(text, -1) {
		s := m[1]
		if seen[s] {
			continue
		}
		seen[s] = true
		switch {
		case pathRe.MatchString(s):
			if strings.Contains(s, "*") {
				if ms, _ := filepath.Glob(filepath.Join(root, s)); len(ms) == 0 {
					out = append(out, s+": no file matches")
				}
			} else if _, err := os.Stat(filepath.Join(root, s)); err != nil {
				out = append(out, s+": no such file")
			}
		case fileRe.MatchString(s):
			// a bare file name (tasks.go) is read in its sentence's directory: not checked
		case settingRe.MatchString(s) && d.config[settingRe.FindStringSubmatch(s)[1]] != nil:
			m := settingRe.FindStringSubmatch(s)
			if !d.config[m[1]][m[2]] {
				out = append(out, s+": no such setting in common/config")
			}
		case flagRe.MatchString(s):
			if !d.cliStrs[flagRe.FindStringSubmatch(s)[1]] {
				out = append(out, s+": no such flag in cmd/beluga")
			}
		case pointRe.MatchString(s):
			if !d.points[pointRe.FindStringSubmatch(s)[1]] {
				out = append(out, s+": no such crash point in common/failpoint")
			}
		case routeRe.MatchString(s):
			m := routeRe.FindStringSubmatch(s)
			if m[2] != "/metrics" && !d.routes[m[1]+" "+m[2]] { // /metrics is served beside the table
				out = append(out, s+": not in api/api.go's route table")
			}
		case qualRe.MatchString(s):
			if why := d.qualified(qualRe.FindStringSubmatch(s)); why != "" {
				out = append(out, s+": "+why)
			}
		case bareRe.MatchString(s) && mixedCase(s) && !notGo[s]:
			if !d.all[s] {
				out = append(out, s+": not declared")
			}
		}
	}
	return out
}

// qualified checks q = [whole, first, recv, name, member] and says what is
// wrong ("" when nothing is). An all-lower-case name after a package or a
// qualifier that is not ours is not checked (cgroup.kill is a file, os.Root
// the standard library's); after a type of ours (runner.launch) it is.
func (d *decls) qualified(q []string) string {
	first, recv, name, member := q[1], q[2], q[3], q[4]
	if recv != "" { // store.(*Store).tx
		if d.pkgs[first] == nil || !d.members[recv][name] {
			return "no method " + name + " on " + recv + " in package " + first
		}
		return ""
	}
	if member != "" { // pkg.Type.Member or Type.Field.Member
		if d.pkgs[first] != nil {
			if !d.pkgs[first][name] {
				return "package " + first + " declares no " + name
			}
			if d.types[name] && !d.members[name][member] {
				return name + " has no " + member
			}
		}
		return ""
	}
	if !mixedCase(name) && !strings.ContainsAny(name[:1], "ABCDEFGHIJKLMNOPQRSTUVWXYZ") &&
		(d.pkgs[first] != nil || d.members[first] == nil) {
		return "" // lower-case after a package or a stranger: a setting key (worker.python); not checked
	}
	switch {
	case d.pkgs[first] != nil && d.types[first] && d.members[first] != nil:
		// both a package and a type name (registry.Term vs Term.Lost): either fits
		if !d.pkgs[first][name] && !d.methods[first][name] && !d.members[first][name] {
			return "neither package nor type " + first + " declares " + name
		}
	case d.pkgs[first] != nil:
		// store.TaskInFlight: the docs name a method by its package
		if !d.pkgs[first][name] && !d.methods[first][name] {
			return "package " + first + " declares no " + name
		}
	case d.members[first] != nil:
		if !d.members[first][name] {
			return "type " + first + " has no " + name
		}
	}
	return "" // a qualifier that is not ours (os.Root, SysProcAttr.Credential)
}

func root(t *testing.T) string {
	r, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(r, "go.mod")); err != nil {
		t.Fatalf("repository root not found from %s: %v", r, err)
	}
	return r
}

func TestDocsNameWhatExists(t *testing.T) {
	r := root(t)
	d := scan(t, r)
	for _, doc := range docs {
		text, err := os.ReadFile(filepath.Join(r, doc))
		if err != nil {
			t.Fatalf("reading %s: %v", doc, err)
		}
		ps := problems(r, d, string(text))
		sort.Strings(ps)
		for _, p := range ps {
			t.Errorf("%s: `%s", doc, p)
		}
	}
}

// The check fails on names and files that do not exist, and passes on
// those that do.
func TestProblemsFindsWhatIsMissing(t *testing.T) {
	r := root(t)
	d := scan(t, r)
	bad := "`master/nosuch.go` `store.NoSuchMethod` `store.(*Store).noSuch` `tasktype.Def.NoSuch` " +
		"`noSuchHelper` `Store.NoSuch` `common/store/nosuch_*.go` `runner.noSuch` `GET /api/v1/nosuch` " +
		"`worker.no_such` `--no-such-flag` `before-no-such@2`"
	good := "`master/term.go` `store.RedactURL` `store.(*Store).tx` `tasktype.Def.Decide` " +
		"`leaderWrite` `Store.SerialWrites` `runner.launch` `Master.cur` `common/store/dialect_*.go` `worker.python` `os.Root` `HOME` `GET /api/v1/instances/{id}?wait=30s` " +
		"`worker.python` `--max-running` `before-send-dispatch@2` `alerts.on`"
	if got := problems(r, d, bad); len(got) != 12 {
		t.Errorf("bad names: got %d problems, want 12: %q", len(got), got)
	}
	if got := problems(r, d, good); len(got) != 0 {
		t.Errorf("good names: got problems %q", got)
	}
}
