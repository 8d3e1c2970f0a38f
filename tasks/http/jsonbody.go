package http

import (
	"bytes"
	"encoding/json"
	"fmt"
	"mime"
	"strings"

	"github.com/beluga-scheduler/beluga/common/params"
)

// A param substituted raw into a JSON body can rewrite it: a value
// `x", "role": "admin` closes its string and adds a field. So a JSON body
// (its Content-Type says JSON, or it parses as JSON) is filled by where
// each ${name} stands: inside a JSON string the value is escaped as string
// text; outside one it must be a single JSON value (a number, true, a
// quoted string, an object...), else the task fails naming the param.
// raw_body: true in the spec turns this off and substitutes as text.

// jsonBody says whether body, with the task's headers, is to be filled as
// JSON.
func jsonBody(body string, headers map[string]string) bool {
	for k, v := range headers {
		if strings.EqualFold(k, "Content-Type") {
			if mt, _, err := mime.ParseMediaType(v); err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json")) {
				return true
			}
		}
	}
	// A body of placeholders alone (`${payload}`) is whatever its value
	// is: text, unless the content type says JSON.
	if strings.TrimSpace(placeholders.ReplaceAllString(body, "")) == "" {
		return false
	}
	// With every ${name} standing for an empty string or 0, does it parse?
	neutral, err := fillJSON(body, func(_ string, inString bool) (string, error) {
		if inString {
			return "", nil
		}
		return "0", nil
	})
	return err == nil && json.Valid([]byte(neutral))
}

// substituteJSON fills each ${name} of a JSON body with its param, escaped
// for where it stands.
func substituteJSON(body string, vals map[string]string) (string, error) {
	return fillJSON(body, func(name string, inString bool) (string, error) {
		v, ok := vals[name]
		if !ok {
			return "", fmt.Errorf("${%s} names no param of the task", name)
		}
		if inString {
			return jsonStringText(v), nil
		}
		if !json.Valid([]byte(v)) {
			return "", fmt.Errorf("${%s} stands outside a JSON string and its value is not one JSON value (a number, true, false, null, a quoted string, an object or a list): put it inside quotes in the body, or set raw_body", name)
		}
		return v, nil
	})
}

// fillJSON walks a JSON text, telling string contents from the rest, and
// replaces each ${identifier} by what value gives for it.
func fillJSON(text string, value func(name string, inString bool) (string, error)) (string, error) {
	var b strings.Builder
	inString, escaped := false, false
	for i := 0; i < len(text); i++ {
		c := text[i]
		if !escaped && c == '$' && strings.HasPrefix(text[i:], "${") {
			if j := strings.IndexByte(text[i:], '}'); j > 0 && params.IsName(text[i+2:i+j]) {
				v, err := value(text[i+2:i+j], inString)
				if err != nil {
					return "", err
				}
				b.WriteString(v)
				i += j
				continue
			}
		}
		switch {
		case escaped:
			escaped = false
		case inString && c == '\\':
			escaped = true
		case c == '"':
			inString = !inString
		}
		b.WriteByte(c)
	}
	return b.String(), nil
}

// jsonStringText is v as the text between a JSON string's quotes.
func jsonStringText(v string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v) // a string always encodes
	s := strings.TrimSuffix(buf.String(), "\n")
	return s[1 : len(s)-1]
}
