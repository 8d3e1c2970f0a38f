package spec

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"
)

// wideBomb is the shape of the spec that was stored as 800 MB: one long
// anchored string, then thousands of params naming it.
func wideBomb() []byte {
	var sb strings.Builder
	sb.WriteString("name: w\nparams:\n  big: &s \"" + strings.Repeat("x", 100<<10) + "\"\n")
	for i := range 8000 {
		fmt.Fprintf(&sb, "  k%d: *s\n", i)
	}
	sb.WriteString("tasks:\n  - {name: a, command: \"true\"}\n")
	return []byte(sb.String())
}

// deepBomb is billion laughs: each level lists the one before ten times.
func deepBomb() []byte {
	var sb strings.Builder
	sb.WriteString("name: w\ntasks:\n  - name: a\n    command: \"true\"\n    depends_on: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&sb, "  - name: b%d\n    command: \"true\"\n    depends_on: &l%d [", i, i)
		for j := range 10 {
			if j > 0 {
				sb.WriteString(", ")
			}
			fmt.Fprintf(&sb, "*l%d", i-1)
		}
		sb.WriteString("]\n")
	}
	return []byte(sb.String())
}

// TestParseAliasBomb: a spec whose aliases expand past MaxSpecBytes is a
// ValidationError naming the aliases, found before the expansion is built:
// the parse costs a bounded amount of memory and time.
func TestParseAliasBomb(t *testing.T) {
	for name, doc := range map[string][]byte{"wide": wideBomb(), "deep": deepBomb()} {
		t.Run(name, func(t *testing.T) {
			if len(doc) > MaxSpecBytes {
				t.Fatalf("bomb is %d bytes, over the body limit", len(doc))
			}
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			start := time.Now()
			w, err := Parse(doc)
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			var ve *ValidationError
			if !errors.As(err, &ve) || !strings.Contains(err.Error(), "YAML aliases expand") {
				n := 0
				if w != nil {
					n = len(w.Params) + len(w.Tasks)
				}
				t.Fatalf("err = %.300v (%d params+tasks)", err, n)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 40<<20 {
				t.Errorf("parsing a %d-byte bomb allocated %d MB", len(doc), alloc>>20)
			}
			if took > 10*time.Second {
				t.Errorf("parsing took %v", took)
			}
		})
	}
}

// TestParseAliasesWithinLimit: aliases whose expansion stays under the limit
// are still a spec (merge keys are how users share task defaults).
func TestParseAliasesWithinLimit(t *testing.T) {
	t.Parallel()
	var sb strings.Builder
	sb.WriteString("name: w\ntasks:\n  - &d {name: t0, command: \"echo " + strings.Repeat("y", 1000) + "\", retries: 2}\n")
	for i := 1; i < 200; i++ {
		fmt.Fprintf(&sb, "  - {<<: *d, name: t%d}\n", i)
	}
	w, err := Parse([]byte(sb.String()))
	if err != nil {
		t.Fatal(err)
	}
	if len(w.Tasks) != 200 || w.Tasks[199].Retries != 2 {
		t.Fatalf("tasks %d", len(w.Tasks))
	}
}
