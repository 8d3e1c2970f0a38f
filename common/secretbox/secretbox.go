// Package secretbox encrypts small secrets (datasource passwords) at rest
// with AES-256-GCM under a key derived from a key file. A sealed value is
// "sb1:" followed by the base64 of a random 12-byte nonce and the
// ciphertext with its tag; the prefix names the format so a later one can
// be told apart. The context string given to Seal and Open is bound in as
// additional data: a value sealed for one datasource does not open as
// another's.
package secretbox

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// prefix marks format version 1.
const prefix = "sb1:"

// MinKeyBytes is the least key file content (after trimming blanks) taken:
// 32 hex digits are 128 bits.
const MinKeyBytes = 32

// ErrNoKey is returned when a secret must be sealed or opened and no key
// file was configured.
var ErrNoKey = errors.New("no secret key configured: set --secret-key-file (env BELUGA_SECRET_KEY_FILE, config secret_key_file)")

// Box seals and opens secrets under one key. A nil *Box has no key: Seal
// and Open return ErrNoKey.
type Box struct {
	aead cipher.AEAD
}

// New derives the AES-256 key from the key file's content with HKDF-SHA256.
func New(material []byte) (*Box, error) {
	material = []byte(strings.TrimSpace(string(material)))
	if len(material) < MinKeyBytes {
		return nil, fmt.Errorf("secret key is %d bytes; it must be at least %d (e.g. openssl rand -hex 32)", len(material), MinKeyBytes)
	}
	key, err := hkdf.Key(sha256.New, material, nil, "beluga secretbox v1", 32)
	if err != nil {
		return nil, fmt.Errorf("derive secret key: %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	return &Box{aead: aead}, nil
}

// Load reads a key file. Its mode is the operator's business (a mounted
// secret may be 0444); worldReadable says when others can read it.
func Load(path string) (b *Box, worldReadable bool, err error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, false, fmt.Errorf("secret key file: %w", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, false, fmt.Errorf("secret key file: %w", err)
	}
	b, err = New(raw)
	if err != nil {
		return nil, false, fmt.Errorf("secret key file %s: %w", path, err)
	}
	return b, fi.Mode().Perm()&0o077 != 0, nil
}

// Ensure returns the key file at path, creating it first (0600, 32 random
// bytes in hex) when it does not exist, so a standalone keeps one key
// across restarts. An existing file is never rewritten.
func Ensure(path string) (*Box, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("secret key file: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		var k [32]byte
		if _, err := rand.Read(k[:]); err != nil {
			f.Close()
			return nil, fmt.Errorf("secret key: %w", err)
		}
		_, werr := f.WriteString(hex.EncodeToString(k[:]) + "\n")
		cerr := f.Close()
		if werr != nil || cerr != nil {
			os.Remove(path)
			return nil, fmt.Errorf("write secret key file %s: %w", path, errors.Join(werr, cerr))
		}
	case !errors.Is(err, fs.ErrExist):
		return nil, fmt.Errorf("create secret key file: %w", err)
	}
	b, _, err := Load(path)
	return b, err
}

// Seal encrypts plain for context (e.g. "datasource/warehouse").
func (b *Box) Seal(plain, context string) (string, error) {
	if b == nil {
		return "", ErrNoKey
	}
	nonce := make([]byte, b.aead.NonceSize(), b.aead.NonceSize()+len(plain)+b.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("seal: %w", err)
	}
	out := b.aead.Seal(nonce, nonce, []byte(plain), []byte(context))
	return prefix + base64.StdEncoding.EncodeToString(out), nil
}

// Open decrypts a value Seal made for the same context. A value sealed
// under another key, for another context, or altered fails without saying
// which.
func (b *Box) Open(sealed, context string) (string, error) {
	if b == nil {
		return "", ErrNoKey
	}
	body, ok := strings.CutPrefix(sealed, prefix)
	if !ok {
		return "", errors.New("open secret: unknown format (want an sb1: value)")
	}
	raw, err := base64.StdEncoding.DecodeString(body)
	if err != nil || len(raw) < b.aead.NonceSize()+b.aead.Overhead() {
		return "", errors.New("open secret: malformed value")
	}
	ns := b.aead.NonceSize()
	plain, err := b.aead.Open(nil, raw[:ns], raw[ns:], []byte(context))
	if err != nil {
		return "", errors.New("open secret: it does not open with this key (was the key file changed?)")
	}
	return string(plain), nil
}
