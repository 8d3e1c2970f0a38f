package spec

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
)

// Canonical returns the spec as canonical JSON, with defaults applied, and the
// sha256 of those bytes in hex. Formatting, YAML versus JSON, key order and
// spelling out a default do not change it; any change of meaning does, which
// is how a PUT decides whether it makes a new version. Field order is that of
// the structs and map keys are sorted (encoding/json does both); list order
// (tasks, depends_on) is kept as written. w itself is not modified. An invalid
// spec is an error: only valid specs get stored.
func (w *Workflow) Canonical() ([]byte, string, error) {
	c := *w
	c.Tasks = slices.Clone(w.Tasks) // ApplyDefaults writes to tasks
	c.ApplyDefaults()
	if err := c.Validate(); err != nil {
		return nil, "", err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // keep "a > b && c" readable in stored specs
	if err := enc.Encode(&c); err != nil {
		return nil, "", err
	}
	out := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	sum := sha256.Sum256(out)
	return out, hex.EncodeToString(sum[:]), nil
}
