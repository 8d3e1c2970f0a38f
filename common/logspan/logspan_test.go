package logspan

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func readAll(t *testing.T, path string, from, to int64, limit int) ([]Span, int64, bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, next, more, err := Read(f, from, to, limit)
	if err != nil {
		t.Fatal(err)
	}
	return s, next, more
}

// A run of stderr is one record however many writes it took; a reopened
// sidecar (a retry appending to the log) goes on from its last record,
// past a torn tail.
func TestWriterExtendsAndReopens(t *testing.T) {
	p := filepath.Join(t.TempDir(), "1.stderr")
	w := NewWriter(p)
	for _, a := range [][2]int64{{5, 3}, {8, 2}, {20, 4}} {
		if err := w.Add(a[0], a[1]); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	if fi, _ := os.Stat(p); fi.Size() != 2*recSize {
		t.Fatalf("sidecar of %d bytes, want two records", fi.Size())
	}
	f, _ := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	f.Write([]byte{1, 2, 3}) // a crash mid-record
	f.Close()
	w = NewWriter(p)
	if err := w.Add(24, 1); err != nil { // goes on the last span
		t.Fatal(err)
	}
	if err := w.Add(30, 2); err != nil {
		t.Fatal(err)
	}
	w.Close()
	got, _, _ := readAll(t, p, 0, 1<<40, 0)
	want := []Span{{5, 10}, {20, 25}, {30, 32}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("spans %v, want %v", got, want)
	}
}

// Read clips to the window and stops at its limit, saying where the next
// span starts.
func TestReadWindowAndLimit(t *testing.T) {
	p := filepath.Join(t.TempDir(), "1.stderr")
	w := NewWriter(p)
	for i := int64(0); i < 10; i++ {
		_ = w.Add(i*10, 5)
	}
	w.Close()
	if got, _, more := readAll(t, p, 12, 43, 0); more || !reflect.DeepEqual(got, []Span{{12, 15}, {20, 25}, {30, 35}, {40, 43}}) {
		t.Fatalf("window spans %v (more %v)", got, more)
	}
	got, next, more := readAll(t, p, 0, 100, 3)
	if !more || next != 30 || len(got) != 3 {
		t.Fatalf("limited: %v next %d more %v", got, next, more)
	}
	if got, _, _ := readAll(t, p, 95, 100, 0); len(got) != 0 {
		t.Fatalf("after the last span: %v", got)
	}
}

// A sidecar is never opened through a symbolic link (a task could plant
// one in the log dir).
func TestWriterRefusesALink(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere")
	os.WriteFile(target, nil, 0o644)
	p := filepath.Join(dir, "1.stderr")
	os.Symlink(target, p)
	if err := NewWriter(p).Add(0, 1); err == nil {
		t.Fatal("wrote through a link")
	}
	if fi, _ := os.Stat(target); fi.Size() != 0 {
		t.Fatal("the link's target was written")
	}
}

func TestFilter(t *testing.T) {
	data := []byte("out1\nerr1\npart err2\nout3\n")
	spans := []Span{{5, 10}, {14, 20}}
	if got := string(Filter(nil, data, 0, spans, true)); got != "err1\n err2\n" {
		t.Fatalf("stderr %q", got)
	}
	if got := string(Filter(nil, data, 0, spans, false)); got != "out1\npartout3\n" {
		t.Fatalf("stdout %q", got)
	}
	// A window from offset 7: spans given in whole-log offsets.
	if got := string(Filter(nil, data[7:], 7, []Span{{7, 10}, {14, 20}}, true)); got != "r1\n err2\n" {
		t.Fatalf("windowed stderr %q", got)
	}
}
