package api

import (
	"context"
	"crypto/rand"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/spec"
)

// MaxBodyBytes bounds every request body: the largest spec plus room for
// the request's own framing, so a spec just over spec.MaxSpecBytes still
// reaches spec.Parse and gets its precise message.
const MaxBodyBytes = spec.MaxSpecBytes + 64<<10

// chain wraps the router in the middleware, outermost first: the request id
// comes first so every later log line carries it, nosniff next so every
// answer has it; the access log sits outside panic recovery so it records
// the 500 recovery writes; the Host and cross-site checks run before
// anything reads a body, and the body limit only for requests that passed
// them. Authentication is per route, after routing (guard in auth.go).
func chain(next http.Handler, log *zap.Logger, hosts hostPolicy) http.Handler {
	next = limitBody(next)
	next = refuseCrossSite(next)
	next = checkHost(next, hosts)
	next = recoverPanics(next, log)
	next = accessLog(next, log)
	next = noSniff(next)
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

// noSniff keeps browsers from reading an answer as anything but its
// declared type: a task log is text/plain with whatever the task printed,
// served on the UI's origin, and must never run as HTML or script.
func noSniff(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("X-Content-Type-Options", "nosniff")
		next.ServeHTTP(w, r)
	})
}

// AllowedHostsHelp says where the allowed Host names are set.
const AllowedHostsHelp = "api.allowed_hosts (flag --allowed-hosts, env BELUGA_API_ALLOWED_HOSTS)"

// hostPolicy is which Host headers the API answers. It is the defence
// against DNS rebinding: a page whose name an attacker points at 127.0.0.1
// is same-origin with the API in the browser's eyes, so only the Host
// header tells its requests apart.
type hostPolicy struct {
	listen   string
	loopback bool            // listening on a loopback address
	any      bool            // answer every Host
	allowed  map[string]bool // further names, lower case, without port
}

// newHostPolicy answers loopback names always; other names only when
// listed, or when the server listens beyond loopback and lists none
// (there the operator chose the names it is reached by). An empty listen
// is taken as loopback, the strict case.
func newHostPolicy(listen string, allowed []string) hostPolicy {
	host, _, err := net.SplitHostPort(listen)
	if err != nil {
		host = listen
	}
	p := hostPolicy{listen: listen, loopback: listen == "" || isLoopbackHost(host), allowed: map[string]bool{}}
	for _, a := range allowed {
		if a == "*" {
			p.any = true
		}
		h, _ := splitHost(a)
		p.allowed[h] = true
	}
	p.any = p.any || (!p.loopback && len(allowed) == 0)
	return p
}

// CheckAllowedHosts names the entries of api.allowed_hosts that are not a
// host name or IP (with an optional port) or "*".
func CheckAllowedHosts(hosts []string) error {
	var bad []string
	for _, h := range hosts {
		name, _ := splitHost(h)
		if h != "*" && (name == "" || strings.ContainsAny(h, "/@?#* \t")) {
			bad = append(bad, fmt.Sprintf("%q", h))
		}
	}
	if len(bad) > 0 {
		return fmt.Errorf("%s: %s: want host names or IPs such as beluga.example.com or 10.0.0.5, or *",
			AllowedHostsHelp, strings.Join(bad, ", "))
	}
	return nil
}

func (p hostPolicy) allows(hostHeader string) bool {
	if p.any || hostHeader == "" { // no Host at all is HTTP/1.0, never a browser
		return true
	}
	h, _ := splitHost(hostHeader)
	return isLoopbackHost(h) || p.allowed[h]
}

func (p hostPolicy) refusal(hostHeader string) string {
	if p.loopback {
		where := "a loopback address"
		if p.listen != "" {
			where = "the loopback address " + p.listen
		}
		return fmt.Sprintf("Host %q is not allowed: this server listens on %s and answers only "+
			"localhost, 127.0.0.1 or [::1] (a guard against DNS rebinding); to reach it under another name, list that name in %s",
			hostHeader, where, AllowedHostsHelp)
	}
	return fmt.Sprintf("Host %q is not allowed: it is not in %s; add it there to reach this server under that name",
		hostHeader, AllowedHostsHelp)
}

// checkHost refuses requests for a Host the policy does not answer.
// GET /healthz stays open: probes address a pod or machine by its IP.
func checkHost(next http.Handler, p hostPolicy) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !p.allows(r.Host) && !(r.URL.Path == "/healthz" && (r.Method == http.MethodGet || r.Method == http.MethodHead)) {
			writeError(w, r, http.StatusForbidden, CodeForbidden, p.refusal(r.Host))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// refuseCrossSite refuses changes a browser sends on behalf of another
// site (a form post or a no-cors fetch from any page the operator opens):
// Sec-Fetch-Site says so in current browsers, and an Origin other than the
// Host says so in every browser that sends Origin. Reads stay open; tools
// such as curl and the CLI send neither header.
func refuseCrossSite(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.Method {
		case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		default:
			next.ServeHTTP(w, r)
			return
		}
		if r.Header.Get("Sec-Fetch-Site") == "cross-site" {
			writeError(w, r, http.StatusForbidden, CodeForbidden, "cross-site request refused: the browser says a page of another site "+
				"sent this "+r.Method+" (Sec-Fetch-Site: cross-site); change Beluga from its own web UI, the CLI or the API directly")
			return
		}
		if o := r.Header.Get("Origin"); o != "" && !sameHost(o, r.Host) {
			writeError(w, r, http.StatusForbidden, CodeForbidden, fmt.Sprintf("cross-origin request refused: Origin %q is not "+
				"the Host %q this %s was sent to; change Beluga from its own web UI, the CLI or the API directly "+
				"(behind a proxy, pass the original Host header on)", o, r.Host, r.Method))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// sameHost says whether origin (scheme://host[:port]) names the host and
// port of the Host header; a missing port is the scheme's default on both
// sides (the browser reached the Host with the origin's scheme).
func sameHost(origin, hostHeader string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false // "null" (a sandboxed or file: page) included
	}
	def := map[string]string{"http": "80", "https": "443"}[u.Scheme]
	oh, op := splitHost(u.Host)
	hh, hp := splitHost(hostHeader)
	if op == "" {
		op = def
	}
	if hp == "" {
		hp = def
	}
	return oh == hh && op == hp
}

// splitHost splits "host[:port]" ("[v6]:port" too) into the lower-case
// host without a trailing dot or brackets, and the port.
func splitHost(s string) (host, port string) {
	host, port, err := net.SplitHostPort(s)
	if err != nil {
		host, port = strings.TrimSuffix(strings.TrimPrefix(s, "["), "]"), ""
	}
	return strings.TrimSuffix(strings.ToLower(host), "."), port
}

// isLoopbackHost says whether host (without port) is localhost or a
// loopback IP.
func isLoopbackHost(host string) bool {
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
