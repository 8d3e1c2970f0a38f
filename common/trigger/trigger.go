// Package trigger holds the decisions of webhook triggers (README, "Webhook
// triggers"): which mappings are valid, what run params a delivery's JSON
// gives, and whether a delivery's token and key are acceptable. It touches
// no storage and no HTTP; the API calls it and records the outcome.
package trigger

import (
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode"

	"github.com/tidwall/gjson"

	"github.com/beluga-scheduler/beluga/common/params"
)

// Limits of a trigger and of one delivery.
const (
	MaxBody       = 1 << 20 // bytes of a delivery's body
	MaxParams     = 64      // params one trigger maps
	MaxPathLen    = 255     // of one mapping's path
	MaxKeyLen     = 255     // of an Idempotency-Key
	MaxValueBytes = 64 << 10
	// RefusedKept is how many refused deliveries a trigger's ledger keeps
	// (the newest); accepted and duplicate ones are all kept.
	RefusedKept = 1000
	// TokenPrefix starts every trigger token, so one is recognisable (in a
	// leaked log, by a secret scanner) and not mistaken for a user token.
	TokenPrefix = "blgt_"
)

// NewToken returns a new trigger secret, shown once; it is stored as
// store.HashToken stores user tokens.
func NewToken() string { return TokenPrefix + rand.Text() }

// HashMatches says whether a delivery's token hash is the stored one, in
// time independent of where they differ.
func HashMatches(got, stored string) bool {
	return stored != "" && subtle.ConstantTimeCompare([]byte(got), []byte(stored)) == 1
}

// CheckMapping says why a trigger's param mapping cannot be stored: every
// name must be a param name any run accepts (params.CheckName), every path
// a non-empty gjson path without control characters.
func CheckMapping(m map[string]string) error {
	if len(m) > MaxParams {
		return fmt.Errorf("params: %d mapped, at most %d", len(m), MaxParams)
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if err := params.CheckName(k); err != nil {
			return fmt.Errorf("params: %w", err)
		}
		p := m[k]
		switch {
		case strings.TrimSpace(p) == "":
			return fmt.Errorf("params: param %q: the path into the request JSON is empty", k)
		case len(p) > MaxPathLen:
			return fmt.Errorf("params: param %q: the path is %d bytes, at most %d", k, len(p), MaxPathLen)
		case strings.ContainsFunc(p, unicode.IsControl):
			return fmt.Errorf("params: param %q: the path has a control character", k)
		}
	}
	return nil
}

// CheckKey says why an Idempotency-Key header cannot be used ("" is none:
// every such delivery starts a run).
func CheckKey(key string) error {
	if len(key) > MaxKeyLen {
		return fmt.Errorf("Idempotency-Key is %d bytes, at most %d", len(key), MaxKeyLen)
	}
	if strings.ContainsFunc(key, unicode.IsControl) {
		return errors.New("Idempotency-Key has a control character")
	}
	return nil
}

// Params reads the run params of a delivery: each mapped path must be in
// body, which must be one JSON value; a string is taken as is, any other
// value as its JSON text (a number as written, an object as JSON). A path
// that is missing or null refuses the delivery, naming the param and path;
// so does a value a run would refuse (params.CheckAll).
func Params(body []byte, mapping map[string]string) (map[string]string, error) {
	if !gjson.ValidBytes(body) {
		return nil, errors.New("the body is not valid JSON")
	}
	out := make(map[string]string, len(mapping))
	for _, k := range slices.Sorted(maps.Keys(mapping)) {
		r := gjson.GetBytes(body, mapping[k])
		if !r.Exists() || r.Type == gjson.Null {
			return nil, fmt.Errorf("param %q: the request JSON has no value at %q", k, mapping[k])
		}
		v := r.String()
		if r.Type == gjson.JSON {
			v = r.Raw
		}
		if len(v) > MaxValueBytes {
			return nil, fmt.Errorf("param %q: the value at %q is %d bytes, at most %d", k, mapping[k], len(v), MaxValueBytes)
		}
		out[k] = v
	}
	if err := params.CheckAll(out); err != nil {
		return nil, err
	}
	return out, nil
}
