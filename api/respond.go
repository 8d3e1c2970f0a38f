package api

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/store"
)

// httpError is an error with the status and code the client should see.
// Handlers return one for anything that is the caller's fault; any other
// error becomes a logged 500.
type httpError struct {
	status int
	code   string
	msg    string
}

func (e *httpError) Error() string { return e.msg }

func badRequest(format string, args ...any) *httpError {
	return &httpError{http.StatusBadRequest, CodeBadRequest, fmt.Sprintf(format, args...)}
}

func conflict(format string, args ...any) *httpError {
	return &httpError{http.StatusConflict, CodeConflict, fmt.Sprintf(format, args...)}
}

func errNotFound(msg string) *httpError {
	return &httpError{http.StatusNotFound, CodeNotFound, msg}
}

func tooLarge(limit int64) *httpError {
	return &httpError{http.StatusRequestEntityTooLarge, CodePayloadTooLarge,
		fmt.Sprintf("request body is larger than the limit of %d bytes", limit)}
}

// storeError maps the store's sentinels to 404, 409 and 400 (a secret sent
// back as its mask with nothing to keep); the store's message
// already names the object ("project \"x\": not found").
func storeError(err error) error {
	switch {
	case errors.Is(err, store.ErrNotFound):
		return &httpError{http.StatusNotFound, CodeNotFound, err.Error()}
	case errors.Is(err, store.ErrConflict):
		// "...; stop them first: conflict": the code already says conflict.
		return &httpError{http.StatusConflict, CodeConflict, strings.TrimSuffix(err.Error(), ": "+store.ErrConflict.Error())}
	case errors.Is(err, store.ErrMaskedSecret), errors.Is(err, store.ErrUnknownCalendar), errors.Is(err, store.ErrNotMissed),
		errors.Is(err, store.ErrBadDataset):
		return badRequest("%s", err.Error())
	case errors.Is(err, store.ErrUnknownVersion):
		return badRequest("%s", strings.TrimSuffix(err.Error(), ": "+store.ErrUnknownVersion.Error()))
	}
	return err
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Only our own types are written; this is a programming error.
		panic(fmt.Sprintf("api: encode %T: %v", v, err))
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func writeError(w http.ResponseWriter, r *http.Request, status int, code, msg string) {
	// Every 429 says when to try again: the login limiter sets its own
	// wait; a quota frees when another request of the caller's ends, so a
	// second is the guess that neither hammers nor stalls.
	if status == http.StatusTooManyRequests && w.Header().Get("Retry-After") == "" {
		w.Header().Set("Retry-After", quotaRetryAfter)
	}
	writeJSON(w, status, ErrorBody{Error: ErrorDetail{Code: code, Message: msg, RequestID: requestID(r.Context())}})
}

// fail answers err: an *httpError as it says; the database out of reach
// as a 503 with Retry-After; anything else as a 500. The cause of the
// last two is logged here (once) and not shown to the caller: driver text
// names internal addresses.
func (h *handlers) fail(w http.ResponseWriter, r *http.Request, err error) {
	var he *httpError
	if errors.As(err, &he) {
		writeError(w, r, he.status, he.code, he.msg)
		return
	}
	if store.Unavailable(err) {
		h.outage.note(h.log, r, err)
		w.Header().Set("Retry-After", strconv.Itoa(int(dbRetryAfter/time.Second)))
		writeError(w, r, http.StatusServiceUnavailable, CodeUnavailable,
			fmt.Sprintf("temporarily unavailable: the database cannot be reached; retry in %d s (request id %s)",
				int(dbRetryAfter/time.Second), requestID(r.Context())))
		return
	}
	h.log.Error("request failed", zap.String("request_id", requestID(r.Context())),
		zap.String("method", r.Method), zap.String("path", r.URL.Path), zap.Error(err))
	writeError(w, r, http.StatusInternalServerError, CodeInternal,
		"internal error; the server log has the details under request id "+requestID(r.Context()))
}

// quotaRetryAfter is the Retry-After of a quota's 429, in seconds.
const quotaRetryAfter = "1"

// dbRetryAfter is what a 503 for an unreachable database asks clients to
// wait: database/sql dials again on the next request, so recovery needs
// no more than the database being back.
const dbRetryAfter = 5 * time.Second

// outageLog logs an unreachable database at most once per outageEvery with
// the driver's error, and how many requests it failed since, rather than
// once per request during an outage.
type outageLog struct {
	mu     sync.Mutex
	last   time.Time
	missed int
}

const outageEvery = 10 * time.Second

func (o *outageLog) note(log *zap.Logger, r *http.Request, err error) {
	o.mu.Lock()
	now := time.Now()
	if !o.last.IsZero() && now.Sub(o.last) < outageEvery {
		o.missed++
		o.mu.Unlock()
		return
	}
	missed := o.missed
	o.last, o.missed = now, 0
	o.mu.Unlock()
	log.Warn("database unreachable: answering 503", zap.String("request_id", requestID(r.Context())),
		zap.String("method", r.Method), zap.String("path", r.URL.Path),
		zap.Int("also_failed_since_last_line", missed), zap.Error(err))
}

// readBody reads the whole (already size-limited) body.
func readBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return nil, tooLarge(mbe.Limit)
		}
		return nil, badRequest("read request body: %v", err)
	}
	return b, nil
}

func unsupportedMedia(format string, args ...any) *httpError {
	return &httpError{http.StatusUnsupportedMediaType, CodeUnsupportedMedia, fmt.Sprintf(format, args...)}
}

// bodyType is the media type (lower case, no parameters) a request body
// declares. A body must declare one: the types a browser may send from any
// site without asking (text/plain, forms) are then refused by every caller
// of bodyType, which names the types it accepts in expected.
func bodyType(r *http.Request, expected string) (string, error) {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return "", unsupportedMedia("the request body has no Content-Type; send it as %s", expected)
	}
	mt, _, err := mime.ParseMediaType(ct)
	if err != nil {
		return "", unsupportedMedia("bad Content-Type %q; send the body as %s", ct, expected)
	}
	return mt, nil
}

// decodeJSON decodes a JSON object body strictly into v: a body not
// declared application/json is a 415; unknown fields, trailing data and
// wrong types are 400s naming the field. An empty body leaves v alone when
// optional.
func decodeJSON(r *http.Request, v any, optional bool) error {
	b, err := readBody(r)
	if err != nil {
		return err
	}
	if len(bytes.TrimSpace(b)) == 0 {
		if optional {
			return nil
		}
		return badRequest("request body is empty; a JSON object is required")
	}
	mt, err := bodyType(r, "application/json")
	if err != nil {
		return err
	}
	if mt != "application/json" {
		return unsupportedMedia("Content-Type %s is not supported; send the body as application/json", mt)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return badRequest("invalid JSON body: %s", describeJSONError(err))
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return badRequest("invalid JSON body: data after the JSON object")
	}
	return nil
}

func describeJSONError(err error) string {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		return fmt.Sprintf("syntax error at byte %d: %s", se.Offset, se.Error())
	case errors.As(err, &te):
		if te.Field == "" {
			return fmt.Sprintf("expected a JSON object, got %s", te.Value)
		}
		return fmt.Sprintf("field %q: expected %s, got %s", te.Field, te.Type.String(), te.Value)
	case errors.Is(err, io.ErrUnexpectedEOF):
		return "unexpected end of input"
	}
	return strings.TrimPrefix(err.Error(), "json: ")
}

// pathID parses a positive integer path parameter.
func pathID(r *http.Request, name string) (int64, error) {
	s := r.PathValue(name)
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, badRequest("path parameter %s must be a positive integer, got %q", name, s)
	}
	return id, nil
}

// queryInt parses an optional integer query parameter within [lo, hi].
func queryInt(r *http.Request, name string, def, lo, hi int64) (int64, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return def, nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil || v < lo || v > hi {
		return 0, badRequest("query parameter %s must be an integer from %d to %d, got %q", name, lo, hi, s)
	}
	return v, nil
}
