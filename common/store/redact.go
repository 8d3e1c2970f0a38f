package store

import (
	"errors"
	"net/url"
	"strings"
)

// redactedPassword stands in for a database password in errors and logs.
const redactedPassword = "xxxxx"

// RedactURL returns a database URL with the password of its user part
// replaced, for errors and logs. It does not need a well-formed URL (it
// redacts the ones that fail to parse too): the user part is what lies
// between "://" and the last "@", so an "@" in the query can make it redact
// more than the password, never less.
func RedactURL(raw string) string {
	user, _, rest, ok := splitPassword(raw)
	if !ok {
		return raw
	}
	return user + ":" + redactedPassword + rest
}

// splitPassword cuts raw into what comes before the password (scheme and
// user name), the password and what follows it (from the "@").
func splitPassword(raw string) (before, pw, after string, ok bool) {
	start := strings.Index(raw, "://")
	if start < 0 {
		return "", "", "", false
	}
	start += len("://")
	at := strings.LastIndex(raw[start:], "@")
	if at < 0 {
		return "", "", "", false
	}
	at += start
	colon := strings.Index(raw[start:at], ":")
	if colon < 0 {
		return "", "", "", false
	}
	colon += start
	return raw[:colon], raw[colon+1 : at], raw[at:], true
}

// redactErr returns err with every spelling of raw's password (as written
// and percent-decoded) replaced in its message; errors.Is and errors.As
// still see the errors it wraps.
func redactErr(err error, raw string) error {
	if err == nil {
		return nil
	}
	_, pw, _, ok := splitPassword(raw)
	if !ok || pw == "" {
		return err
	}
	msg := err.Error()
	spellings := []string{pw}
	if dec, derr := url.PathUnescape(pw); derr == nil && dec != pw {
		spellings = append(spellings, dec)
	}
	for _, s := range spellings {
		msg = strings.ReplaceAll(msg, s, redactedPassword)
	}
	return &redactedError{msg: msg, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// urlParseProblem words a url.Parse failure without quoting the URL (the
// *url.Error would) or the bad escape (part of the password, often).
func urlParseProblem(err error) string {
	var ee url.EscapeError
	if errors.As(err, &ee) {
		return "invalid URL escape: a % must be followed by two hex digits (percent-encode %, @, : and / in a password)"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}
