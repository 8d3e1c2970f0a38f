package secret

import (
	"bytes"
	"regexp"
)

// MaskMap returns m with every sealed value shown as Mask. m itself is not
// changed; a map with nothing sealed is returned as it is.
func MaskMap(m map[string]string) map[string]string {
	sealed := false
	for _, v := range m {
		sealed = sealed || IsSealed(v)
	}
	if !sealed {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if IsSealed(v) {
			v = Mask
		}
		out[k] = v
	}
	return out
}

// MaskJSON returns the JSON document raw with every string that is a
// sealed value replaced by Mask, wherever it sits (a stored spec's params),
// keeping everything else byte for byte: key order and formatting as
// stored. A sealed value needs no JSON escaping (Prefix and base64), so its
// written form is exactly a quote, the value and a quote.
func MaskJSON(raw []byte) []byte {
	if !bytes.Contains(raw, []byte(Prefix)) {
		return raw
	}
	return sealedJSON.ReplaceAll(raw, []byte(`"`+Mask+`"`))
}

var sealedJSON = regexp.MustCompile(`"` + regexp.QuoteMeta(Prefix) + `[A-Za-z0-9+/]*"`)
