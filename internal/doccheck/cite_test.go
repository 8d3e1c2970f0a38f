package doccheck

import (
	"go/ast"
	"go/parser"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var (
	// a code comment's citation of a section: docs/architecture.md, "Crash points"
	citeRe = regexp.MustCompile(`docs/architecture\.md[,:]?\s+(?:section\s+)?"([^"]+)"`)
	// a section of the page: a heading, or a paragraph's bold lead
	headingRe = regexp.MustCompile(`(?m)^#+ (.+)$`)
	leadRe    = regexp.MustCompile(`\*\*([^*]+)\*\*`)
	spaces    = regexp.MustCompile(`\s+`)
)

// sections are the titles a citation may name: headings and bold leads.
func sections(page string) []string {
	var out []string
	for _, m := range headingRe.FindAllStringSubmatch(page, -1) {
		out = append(out, m[1])
	}
	for _, m := range leadRe.FindAllStringSubmatch(page, -1) {
		out = append(out, strings.TrimSuffix(spaces.ReplaceAllString(m[1], " "), "."))
	}
	return out
}

// badCites lists the quoted citations of text that name no section: a
// citation may be a section's title or its beginning ("Dispatch: queue").
func badCites(text string, secs []string) []string {
	var out []string
	for _, m := range citeRe.FindAllStringSubmatch(spaces.ReplaceAllString(text, " "), -1) {
		cited := strings.TrimSuffix(m[1], ".")
		found := false
		for _, s := range secs {
			if strings.HasPrefix(s, cited) {
				found = true
				break
			}
		}
		if !found {
			out = append(out, cited)
		}
	}
	return out
}

// Code comments and the other docs cite docs/architecture.md by section
// ("Lifecycle of a run", step 5): each quoted section must still be there.
func TestCodeCitesSectionsThatExist(t *testing.T) {
	r := root(t)
	page, err := os.ReadFile(filepath.Join(r, "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	secs := sections(string(page))
	cites := 0
	err = eachGoFile(r, parser.ParseComments|parser.SkipObjectResolution, func(rel string, f *ast.File) {
		for _, g := range f.Comments {
			text := g.Text()
			cites += len(citeRe.FindAllString(spaces.ReplaceAllString(text, " "), -1))
			for _, c := range badCites(text, secs) {
				t.Errorf("%s cites docs/architecture.md, %q: no such section", rel, c)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	mds, _ := filepath.Glob(filepath.Join(r, "docs", "*.md"))
	for _, md := range append(mds, filepath.Join(r, "README.md")) {
		b, err := os.ReadFile(md)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(r, md)
		cites += len(citeRe.FindAllString(spaces.ReplaceAllString(string(b), " "), -1))
		for _, c := range badCites(string(b), secs) {
			t.Errorf("%s cites docs/architecture.md, %q: no such section", rel, c)
		}
	}
	if cites == 0 {
		t.Fatal("no citation found: has the form of citations changed?")
	}
}

func TestBadCitesFindsWhatIsMissing(t *testing.T) {
	secs := sections("# Title\n## Crash points\n**Reasons for a wait** (api)\n")
	text := `(docs/architecture.md, "Crash
points") and docs/architecture.md "Reasons for" and (docs/architecture.md, "No such").`
	if got := badCites(text, secs); len(got) != 1 || got[0] != "No such" {
		t.Errorf("bad cites %q, want [No such]", got)
	}
}
