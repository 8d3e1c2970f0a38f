package secretbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSealOpen(t *testing.T) {
	t.Parallel()
	b, err := New([]byte(strings.Repeat("k", 40)))
	if err != nil {
		t.Fatal(err)
	}
	s1, err := b.Seal("hunter2", "datasource/a")
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := b.Seal("hunter2", "datasource/a")
	if !strings.HasPrefix(s1, "sb1:") || s1 == s2 || strings.Contains(s1, "hunter2") {
		t.Fatalf("sealed %q and %q: want sb1: prefix, a fresh nonce each time, no plaintext", s1, s2)
	}
	if got, err := b.Open(s1, "datasource/a"); err != nil || got != "hunter2" {
		t.Fatalf("open = %q, %v", got, err)
	}
	if _, err := b.Open(s1, "datasource/b"); err == nil {
		t.Fatal("a value sealed for one context opened for another")
	}
	other, _ := New([]byte(strings.Repeat("x", 40)))
	if _, err := other.Open(s1, "datasource/a"); err == nil || !strings.Contains(err.Error(), "key") {
		t.Fatalf("open under another key: %v", err)
	}
	tampered := s1[:len(s1)-2] + "AA"
	if tampered == s1 {
		tampered = s1[:len(s1)-2] + "BB"
	}
	for _, bad := range []string{tampered, "sb1:!!!", "sb1:", "plain", "sb2:" + s1[4:]} {
		if _, err := b.Open(bad, "datasource/a"); err == nil {
			t.Errorf("Open(%q) succeeded", bad)
		}
	}
	var none *Box
	if _, err := none.Seal("x", "c"); !errors.Is(err, ErrNoKey) {
		t.Fatalf("nil box Seal: %v", err)
	}
	if _, err := none.Open(s1, "c"); !errors.Is(err, ErrNoKey) {
		t.Fatalf("nil box Open: %v", err)
	}
}

func TestShortKeyRefused(t *testing.T) {
	t.Parallel()
	if _, err := New([]byte("  short \n")); err == nil || !strings.Contains(err.Error(), "at least 32") {
		t.Fatalf("short key: %v", err)
	}
}

func TestEnsureCreatesOnceAndReuses(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sub", "secret.key")
	b1, err := Ensure(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, want 0600", fi.Mode().Perm())
	}
	first, _ := os.ReadFile(path)
	sealed, _ := b1.Seal("pw", "c")
	b2, err := Ensure(path)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(path)
	if string(first) != string(again) {
		t.Fatal("Ensure rewrote an existing key file")
	}
	if got, err := b2.Open(sealed, "c"); err != nil || got != "pw" {
		t.Fatalf("reused key does not open: %q %v", got, err)
	}
	if err := os.WriteFile(path, []byte("tiny"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Ensure(path); err == nil {
		t.Fatal("Ensure accepted an existing short key file")
	}
	if _, _, err := Load(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("Load of a missing file succeeded")
	}
}
