package api

import (
	"context"
	"crypto/rand"
	"fmt"
	"net/http"
	"runtime/debug"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/spec"
)

// MaxBodyBytes bounds every request body: the largest spec plus room for
// the request's own framing, so a spec just over spec.MaxSpecBytes still
// reaches spec.Parse and gets its precise message.
const MaxBodyBytes = spec.MaxSpecBytes + 64<<10

// chain wraps the router in the middleware, outermost first: the request id
// comes first so every later log line carries it; the access log sits outside
// panic recovery so it records the 500 recovery writes; the body limit and
// auth run only for requests that are logged and protected.
func chain(next http.Handler, log *zap.Logger) http.Handler {
	next = authenticate(next)
	next = limitBody(next)
	next = recoverPanics(next, log)
	next = accessLog(next, log)
	return withRequestID(next)
}

type ctxKey struct{}

// requestID returns the id withRequestID put in ctx ("" outside a request).
func requestID(ctx context.Context) string {
	id, _ := ctx.Value(ctxKey{}).(string)
	return id
}

// withRequestID takes the caller's X-Request-Id when it is sane (a proxy's
// id ties our logs to its own), or makes one, and echoes it back.
func withRequestID(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get("X-Request-Id")
		if !saneRequestID(id) {
			id = rand.Text()
		}
		w.Header().Set("X-Request-Id", id)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), ctxKey{}, id)))
	})
}

func saneRequestID(s string) bool {
	if s == "" || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9'
		if !(alnum || c == '-' || c == '_' || c == '.' || c == ':') {
			return false
		}
	}
	return true
}

// recorder remembers what a handler wrote, for the access log and for
// recovery (which may only answer 500 while nothing was sent).
type recorder struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (r *recorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
	r.ResponseWriter.WriteHeader(code)
}

func (r *recorder) Write(b []byte) (int, error) {
	if r.status == 0 {
		r.status = http.StatusOK
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

func accessLog(next http.Handler, log *zap.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec := &recorder{ResponseWriter: w}
		start := time.Now()
		// Deferred so a request aborted by a panic is logged too.
		defer func() {
			status := rec.status
			if status == 0 {
				status = http.StatusOK // the handler wrote nothing: net/http sends 200
			}
			// Successful reads are debug: probes and `run --wait` poll
			// several times a second and would drown the log. Changes and
			// failures are info, server faults errors.
			lvl := zap.InfoLevel
			switch {
			case status >= 500:
				lvl = zap.ErrorLevel
			case status < 400 && (r.Method == http.MethodGet || r.Method == http.MethodHead):
				lvl = zap.DebugLevel
			}
			log.Log(lvl, "request", zap.String("request_id", requestID(r.Context())),
				zap.String("method", r.Method), zap.String("path", r.URL.Path),
				zap.Int("status", status), zap.Int64("bytes", rec.bytes),
				zap.Duration("duration", time.Since(start)), zap.String("remote", r.RemoteAddr))
		}()
		next.ServeHTTP(rec, r)
	})
}

// recoverPanics turns a handler panic into a logged 500 so one bad request
// never takes the server down. When part of the response is already out, it
// aborts the connection instead: a truncated 200 must not look complete.
func recoverPanics(next http.Handler, log *zap.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			v := recover()
			if v == nil {
				return
			}
			if v == http.ErrAbortHandler {
				panic(v)
			}
			log.Error("handler panic", zap.String("request_id", requestID(r.Context())),
				zap.String("method", r.Method), zap.String("path", r.URL.Path),
				zap.String("panic", fmt.Sprint(v)), zap.ByteString("stack", debug.Stack()))
			if rec, ok := w.(*recorder); ok && rec.status != 0 {
				panic(http.ErrAbortHandler)
			}
			writeError(w, r, http.StatusInternalServerError, CodeInternal,
				"internal error; the server log has the details under request id "+requestID(r.Context()))
		}()
		next.ServeHTTP(w, r)
	})
}

// limitBody refuses bodies over MaxBodyBytes: at once when Content-Length
// says so, else when the handler reads past the limit (readBody maps that
// to 413).
func limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > MaxBodyBytes {
			// The unread body would otherwise be drained by net/http.
			w.Header().Set("Connection", "close")
			writeError(w, r, http.StatusRequestEntityTooLarge, CodePayloadTooLarge, tooLarge(MaxBodyBytes).msg)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, MaxBodyBytes)
		next.ServeHTTP(w, r)
	})
}

// authenticate is where authentication will go (tokens, DESIGN.md "Data
// model": users, tokens). It runs after the body limit and before routing;
// /healthz must stay open to probes. Today every request passes.
func authenticate(next http.Handler) http.Handler { return next }
