// Package secret keeps secrets secret at rest: it seals small values
// (AES-256-GCM, a fresh random nonce each time) under a Box's key, tells a
// sealed value from a plain one, and masks sealed values in what the API
// answers. Two keys use it: secret params are sealed under a key derived
// from the cluster secret (NewBox), datasource passwords under one derived
// from the secret key file (keyfile.go). A sealed value carries its own
// marker (Prefix), so params maps keep their shape everywhere they are
// stored and read: plain values are untouched, and whoever reads a map
// sees which values are secret.
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
	"strconv"
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

// ErrNoKey is returned when a secret must be sealed or opened by a Box
// that has no key (nil): callers say which setting gives it.
var ErrNoKey = errors.New("no key to seal or open secrets (the cluster secret for secret params, --secret-key-file for datasource passwords)")

// Box seals and opens secret values under one key. A nil *Box has no key:
// Seal and Open fail with ErrNoKey.
type Box struct {
	aead   cipher.AEAD
	digest []byte
}

// NewBox makes the Box of secret params under the cluster secret s.
func NewBox(s clusterkey.Secret) (*Box, error) {
	if s.Empty() {
		return nil, ErrNoKey
	}
	return newBox(s.Key(clusterkey.PurposeParams), s.Key(clusterkey.PurposeParamDigest))
}

// newBox makes a Box of a 32-byte key (AES-256) and the HMAC key of its
// digests.
func newBox(key, digest []byte) (*Box, error) {
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secret key: %w", err)
	}
	return &Box{aead: aead, digest: digest}, nil
}

// IsSealed reports whether v is a sealed value.
func IsSealed(v string) bool { return strings.HasPrefix(v, Prefix) }

// Seal encrypts a secret param's value. A value that is sealed already
// is returned as it is (a schedule's params copied into a run).
func (b *Box) Seal(plain string) (string, error) {
	if IsSealed(plain) {
		return plain, nil
	}
	return b.SealFor(plain, "")
}

// Open decrypts a sealed secret param. A plain value is an error: the
// caller asked for a secret and must not get a guess.
func (b *Box) Open(v string) (string, error) { return b.OpenFor(v, "") }

// SealFor encrypts plain bound to context (e.g. "datasource/warehouse"),
// which is authenticated with it: the value opens only for the same
// context. It always encrypts, whatever plain looks like.
func (b *Box) SealFor(plain, context string) (string, error) {
	if b == nil {
		return "", ErrNoKey
	}
	n := b.aead.NonceSize()
	nonce := make([]byte, n, n+len(plain)+b.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return "", fmt.Errorf("seal secret: %w", err)
	}
	out := b.aead.Seal(nonce, nonce, []byte(plain), []byte(context))
	return Prefix + base64.RawStdEncoding.EncodeToString(out), nil
}

// OpenFor decrypts a value SealFor made for the same context. A value
// sealed under another key, for another context, or altered fails without
// saying which.
func (b *Box) OpenFor(v, context string) (string, error) {
	body, ok := strings.CutPrefix(v, Prefix)
	if !ok {
		return "", errors.New("not a sealed value")
	}
	if b == nil {
		return "", ErrNoKey
	}
	n := b.aead.NonceSize()
	raw, err := base64.RawStdEncoding.DecodeString(body)
	if err != nil || len(raw) < n+b.aead.Overhead() {
		return "", errors.New("sealed value is damaged")
	}
	plain, err := b.aead.Open(nil, raw[:n], raw[n:], []byte(context))
	if err != nil {
		return "", errors.New("sealed value does not open with this key (sealed under another, or damaged)")
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

// LinkContext binds a secret param sealed for the master-worker link to
// one attempt of one task: a sealed value copied into another dispatch
// does not open.
func LinkContext(taskInstanceID int64, attempt int) string {
	return "dispatch " + strconv.FormatInt(taskInstanceID, 10) + "/" + strconv.Itoa(attempt)
}
