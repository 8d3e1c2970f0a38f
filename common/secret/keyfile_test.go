package secret

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestSealForBindsContextAndKey(t *testing.T) {
	t.Parallel()
	b, err := FromKey([]byte(strings.Repeat("k", 40)))
	if err != nil {
		t.Fatal(err)
	}
	s1, err := b.SealFor("hunter2", "datasource/a")
	if err != nil {
		t.Fatal(err)
	}
	s2, _ := b.SealFor("hunter2", "datasource/a")
	if !IsSealed(s1) || s1 == s2 || strings.Contains(s1, "hunter2") {
		t.Fatalf("sealed %q and %q: want the prefix, a fresh nonce each time, no plaintext", s1, s2)
	}
	if got, err := b.OpenFor(s1, "datasource/a"); err != nil || got != "hunter2" {
		t.Fatalf("open = %q, %v", got, err)
	}
	if _, err := b.OpenFor(s1, "datasource/b"); err == nil {
		t.Fatal("a value sealed for one context opened for another")
	}
	if _, err := b.Open(s1); err == nil {
		t.Fatal("a value sealed for a context opened as a secret param")
	}
	other, _ := FromKey([]byte(strings.Repeat("x", 40)))
	if _, err := other.OpenFor(s1, "datasource/a"); err == nil || !strings.Contains(err.Error(), "key") {
		t.Fatalf("open under another key: %v", err)
	}
	// A value that merely looks sealed is still encrypted: it is a password.
	if s3, _ := b.SealFor(s1, "datasource/a"); s3 == s1 {
		t.Fatal("SealFor passed a sealed-looking value through")
	}
	tampered := s1[:len(s1)-2] + "AA"
	if tampered == s1 {
		tampered = s1[:len(s1)-2] + "BB"
	}
	for _, bad := range []string{tampered, Prefix + "!!!", Prefix, "plain", "beluga:sealed:v2:" + strings.TrimPrefix(s1, Prefix)} {
		if _, err := b.OpenFor(bad, "datasource/a"); err == nil {
			t.Errorf("OpenFor(%q) succeeded", bad)
		}
	}
	var none *Box
	if _, err := none.SealFor("x", "c"); !errors.Is(err, ErrNoKey) {
		t.Fatalf("nil box SealFor: %v", err)
	}
	if _, err := none.OpenFor(s1, "c"); !errors.Is(err, ErrNoKey) {
		t.Fatalf("nil box OpenFor: %v", err)
	}
}

func TestShortKeyRefused(t *testing.T) {
	t.Parallel()
	if _, err := FromKey([]byte("  short \n")); err == nil || !strings.Contains(err.Error(), "at least 32") {
		t.Fatalf("short key: %v", err)
	}
}

func TestEnsureKeyFileCreatesOnceAndReuses(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sub", "secret.key")
	b1, err := EnsureKeyFile(path)
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
	sealed, _ := b1.SealFor("pw", "c")
	b2, err := EnsureKeyFile(path)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(path)
	if string(first) != string(again) {
		t.Fatal("EnsureKeyFile rewrote an existing key file")
	}
	if got, err := b2.OpenFor(sealed, "c"); err != nil || got != "pw" {
		t.Fatalf("reused key does not open: %q %v", got, err)
	}
	if err := os.WriteFile(path, []byte("tiny"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := EnsureKeyFile(path); err == nil {
		t.Fatal("EnsureKeyFile accepted an existing short key file")
	}
	if _, _, err := LoadKeyFile(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Fatal("LoadKeyFile of a missing file succeeded")
	}
}
