// Package secret keeps secret params secret: it seals their values for
// storage (AES-256-GCM under a key derived from the cluster secret), tells a
// sealed value from a plain one, and masks sealed values in what the API
// answers. A sealed value carries its own marker (Prefix), so params maps
// keep their shape everywhere they are stored and read: plain values are
// untouched, and whoever reads a map sees which values are secret.
package secret

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/beluga-scheduler/beluga/common/clusterkey"
)

// Mask is what every answer and log shows for a secret value.
const Mask = "***"

// Prefix starts every sealed value; the version lets a later key or
// cipher be told apart from this one.
const Prefix = "beluga:sealed:v1:"

// digestPrefix starts the stand-in Digest gives for a value in a spec hash.
const digestPrefix = "beluga:digest:v1:"

// ErrNoKey is returned when a secret must be sealed or opened by a process
// that was given no cluster secret.
var ErrNoKey = errors.New("no cluster secret: secret params cannot be sealed or opened")

// Box seals and opens secret values. A nil *Box has no key: Seal and Open
// fail with ErrNoKey.
type Box struct {
	aead   cipher.AEAD
	digest []byte
}

// NewBox makes the Box of the cluster secret s.
func NewBox(s clusterkey.Secret) (*Box, error) {
	if s.Empty() {
		return nil, ErrNoKey
	}
	block, err := aes.NewCipher(s.Key(clusterkey.PurposeParams)) // 32 bytes: AES-256
	if err != nil {
		return nil, fmt.Errorf("secret params key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secret params key: %w", err)
	}
	return &Box{aead: aead, digest: s.Key(clusterkey.PurposeParamDigest)}, nil
}

// IsSealed reports whether v is a sealed value.
func IsSealed(v string) bool { return strings.HasPrefix(v, Prefix) }

// Seal encrypts plain under a fresh random nonce. A value that is sealed
// already is returned as it is (a schedule's params copied into a run).
func (b *Box) Seal(plain string) (string, error) {
	if IsSealed(plain) {
		return plain, nil
	}
	if b == nil {
		return "", ErrNoKey
	}
	nonce := make([]byte, b.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("seal secret param: %w", err)
	}
	out := b.aead.Seal(nonce, nonce, []byte(plain), []byte(Prefix))
	return Prefix + base64.RawStdEncoding.EncodeToString(out), nil
}

// Open decrypts a sealed value. A plain value is an error: the caller asked
// for a secret and must not get a guess.
func (b *Box) Open(v string) (string, error) {
	body, ok := strings.CutPrefix(v, Prefix)
	if !ok {
		return "", errors.New("not a sealed value")
	}
	if b == nil {
		return "", ErrNoKey
	}
	raw, err := base64.RawStdEncoding.DecodeString(body)
	if err != nil || len(raw) < b.aead.NonceSize() {
		return "", errors.New("sealed value is damaged")
	}
	n := b.aead.NonceSize()
	plain, err := b.aead.Open(nil, raw[:n], raw[n:], []byte(Prefix))
	if err != nil {
		return "", errors.New("sealed value does not open with this cluster secret (sealed under another, or damaged)")
	}
	return string(plain), nil
}

// Digest is a keyed stand-in for plain in a spec's hash: equal values give
// equal digests, so re-applying an unchanged spec makes no new version, and
// the hash, which the API shows, is no oracle for guessing the value. A
// sealed value (one kept from an earlier version) is opened first, so it
// digests as its plaintext does.
func (b *Box) Digest(plain string) (string, error) {
	if b == nil {
		return "", ErrNoKey
	}
	if IsSealed(plain) {
		var err error
		if plain, err = b.Open(plain); err != nil {
			return "", err
		}
	}
	m := hmac.New(sha256.New, b.digest)
	m.Write([]byte(plain))
	return digestPrefix + hex.EncodeToString(m.Sum(nil)), nil
}

// SealNamed returns a copy of m with the values named in names sealed; m
// itself is not changed. Values already sealed stay as they are.
func (b *Box) SealNamed(m map[string]string, names []string) (map[string]string, error) {
	return b.mapNamed(m, names, b.Seal)
}

// DigestNamed is SealNamed with Digest.
func (b *Box) DigestNamed(m map[string]string, names []string) (map[string]string, error) {
	return b.mapNamed(m, names, b.Digest)
}

func (b *Box) mapNamed(m map[string]string, names []string, f func(string) (string, error)) (map[string]string, error) {
	if len(m) == 0 || !hasAny(m, names) {
		return m, nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if slices.Contains(names, k) {
			sv, err := f(v)
			if err != nil {
				return nil, fmt.Errorf("param %s: %w", k, err)
			}
			v = sv
		}
		out[k] = v
	}
	return out, nil
}

func hasAny(m map[string]string, names []string) bool {
	for _, n := range names {
		if _, ok := m[n]; ok {
			return true
		}
	}
	return false
}
