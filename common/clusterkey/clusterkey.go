// Package clusterkey owns the cluster secret that masters, workers and API
// servers share: loading it from its file, making one for standalone, and
// deriving the purpose-bound keys used by the transport handshake
// (remote/auth.go), ZooKeeper's digest ACLs and heartbeat signatures
// (common/registry). Each use gets its own key, so a key that leaks from
// one of them (a ZooKeeper digest in a server's log) does not give the
// others.
package clusterkey

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// MinLen is the shortest secret accepted, in bytes.
const MinLen = 16

// GeneratedLen is the size of a secret Ensure makes.
const GeneratedLen = 32

// Purposes of derived keys.
const (
	PurposeHandshake = "beluga transport handshake v1"
	PurposeZKDigest  = "beluga zookeeper digest v1"
	PurposeSignature = "beluga registry signature v1"
	// Secret params (common/secret): the AES-256-GCM key that seals them
	// at rest, and the HMAC key of their stand-ins in a spec's hash.
	PurposeParams      = "beluga secret params v1"
	PurposeParamDigest = "beluga secret param digest v1"
)

// Secret is the cluster secret. Its String never shows the bytes.
type Secret struct{ b []byte }

// New checks b (at least MinLen bytes) and wraps a copy.
func New(b []byte) (Secret, error) {
	if len(b) < MinLen {
		return Secret{}, fmt.Errorf("cluster secret is %d bytes: want at least %d", len(b), MinLen)
	}
	return Secret{b: append([]byte(nil), b...)}, nil
}

// Empty reports a zero Secret.
func (s Secret) Empty() bool { return len(s.b) == 0 }

func (s Secret) String() string { return "[cluster secret]" }

// Key derives the key for purpose: HMAC-SHA256(secret, purpose).
func (s Secret) Key(purpose string) []byte {
	m := hmac.New(sha256.New, s.b)
	m.Write([]byte(purpose))
	return m.Sum(nil)
}

// ZKPassword is the password of Beluga's ZooKeeper digest user.
func (s Secret) ZKPassword() string {
	return base64.RawURLEncoding.EncodeToString(s.Key(PurposeZKDigest))
}

// Load reads the secret file. Surrounding white space (a trailing newline
// from an editor or `echo`) is not part of the secret.
func Load(path string) (Secret, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Secret{}, fmt.Errorf("cluster secret file: %w", err)
	}
	s, err := New([]byte(strings.TrimSpace(string(b))))
	if err != nil {
		return Secret{}, fmt.Errorf("cluster secret file %s: %w", path, err)
	}
	return s, nil
}

// Ensure loads the secret at path, or makes one (GeneratedLen random bytes,
// base64, mode 0600) if the file does not exist: standalone keeps its own
// under its data dir, the same across restarts.
func Ensure(path string) (Secret, error) {
	s, err := Load(path)
	if err == nil || !errors.Is(err, fs.ErrNotExist) {
		return s, err
	}
	raw := make([]byte, GeneratedLen)
	if _, err := rand.Read(raw); err != nil {
		return Secret{}, fmt.Errorf("make cluster secret: %w", err)
	}
	text := base64.RawURLEncoding.EncodeToString(raw)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return Secret{}, fmt.Errorf("make cluster secret: %w", err)
	}
	// O_EXCL: of two processes making it at once, one writes and both read
	// the same file.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return Load(path)
	}
	if err != nil {
		return Secret{}, fmt.Errorf("make cluster secret: %w", err)
	}
	if _, err := f.WriteString(text + "\n"); err != nil {
		f.Close()
		return Secret{}, fmt.Errorf("make cluster secret %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return Secret{}, fmt.Errorf("make cluster secret %s: %w", path, err)
	}
	return New([]byte(text))
}
