package secret

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/beluga-scheduler/beluga/common/clusterkey"
)

// The secret key file (--secret-key-file) gives the Box of datasource
// passwords; its keys are derived from the file's content as the cluster
// secret's are from it, for purposes of their own.
const (
	purposeKeyFile       = "beluga datasource passwords v1"
	purposeKeyFileDigest = "beluga datasource password digest v1"
)

// MinKeyBytes is the least key file content (after trimming blanks) taken:
// 32 hex digits are 128 bits.
const MinKeyBytes = 32

// FromKey makes the Box of a secret key file's content.
func FromKey(material []byte) (*Box, error) {
	material = bytes.TrimSpace(material)
	if len(material) < MinKeyBytes {
		return nil, fmt.Errorf("secret key is %d bytes; it must be at least %d (e.g. openssl rand -hex 32)", len(material), MinKeyBytes)
	}
	k, err := clusterkey.New(material)
	if err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	return newBox(k.Key(purposeKeyFile), k.Key(purposeKeyFileDigest))
}

// LoadKeyFile reads a secret key file. Its mode is the operator's business
// (a mounted secret may be 0444); worldReadable says when others can read
// it.
func LoadKeyFile(path string) (b *Box, worldReadable bool, err error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, false, fmt.Errorf("secret key file: %w", err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		return nil, false, fmt.Errorf("secret key file: %w", err)
	}
	b, err = FromKey(raw)
	if err != nil {
		return nil, false, fmt.Errorf("secret key file %s: %w", path, err)
	}
	return b, fi.Mode().Perm()&0o077 != 0, nil
}

// EnsureKeyFile returns the key file at path, creating it first (0600, 32
// random bytes in hex) when it does not exist, so a standalone keeps one
// key across restarts. An existing file is never rewritten.
func EnsureKeyFile(path string) (*Box, error) {
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
	b, _, err := LoadKeyFile(path)
	return b, err
}
