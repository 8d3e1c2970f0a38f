package events

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// SignatureHeader carries "t=<unix seconds>,v1=<hex HMAC-SHA256>" on every
// webhook POST. The MAC covers "<t>." followed by the body, so a receiver
// can refuse old replays by t.
const SignatureHeader = "Beluga-Signature"

// Sign returns the signature header value for body sent at t.
func Sign(secret []byte, t time.Time, body []byte) string {
	ts := strconv.FormatInt(t.Unix(), 10)
	return "t=" + ts + ",v1=" + hex.EncodeToString(mac(secret, ts, body))
}

func mac(secret []byte, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Verify checks a signature header against body and returns its time.
func Verify(secret []byte, header string, body []byte) (time.Time, error) {
	var ts, sig string
	for _, part := range strings.Split(header, ",") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "t":
			ts = v
		case "v1":
			sig = v
		}
	}
	sec, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return time.Time{}, fmt.Errorf("signature: bad or missing timestamp %q", ts)
	}
	got, err := hex.DecodeString(sig)
	if err != nil || len(got) == 0 {
		return time.Time{}, fmt.Errorf("signature: bad or missing v1 %q", sig)
	}
	if !hmac.Equal(got, mac(secret, ts, body)) {
		return time.Time{}, fmt.Errorf("signature: does not match the body")
	}
	return time.Unix(sec, 0), nil
}

// SealContext binds a subscription's sealed secret to its name
// (common/secret SealFor), so a sealed value cannot be moved to another.
func SealContext(subscription string) string { return "subscription:" + subscription }
