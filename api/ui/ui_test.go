package ui

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func serve(t *testing.T, method, target string, header map[string]string) *http.Response {
	t.Helper()
	notFound := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		_, _ = io.WriteString(w, `{"error":{"code":"not_found","message":"no such route"}}`)
	})
	req := httptest.NewRequest(method, target, nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	Handler(notFound).ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestIndexHeaders(t *testing.T) {
	t.Parallel()
	r := serve(t, "GET", "/", nil)
	if r.StatusCode != http.StatusOK {
		t.Fatalf("GET /: status %d", r.StatusCode)
	}
	want := map[string]string{
		"Content-Type":           "text/html; charset=utf-8",
		"X-Content-Type-Options": "nosniff",
		"Cache-Control":          "no-cache",
		"X-Frame-Options":        "DENY",
	}
	for k, v := range want {
		if got := r.Header.Get(k); got != v {
			t.Errorf("%s = %q, want %q", k, got, v)
		}
	}
	csp := r.Header.Get("Content-Security-Policy")
	for _, part := range []string{"default-src 'self'", "script-src 'self'", "object-src 'none'", "frame-ancestors 'none'"} {
		if !strings.Contains(csp, part) {
			t.Errorf("CSP %q lacks %q", csp, part)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("CSP %q allows inline code", csp)
	}
	if !strings.Contains(body(t, r), `<script type="module" crossorigin src="/ui/assets/app.js">`) {
		t.Error("index.html does not load the app module")
	}
}

func TestAssetTypesAndCaching(t *testing.T) {
	t.Parallel()
	for target, ct := range map[string]string{
		"/ui/assets/index.css": "text/css; charset=utf-8",
		"/ui/assets/app.js":    "text/javascript; charset=utf-8",
		"/ui/favicon.svg":      "image/svg+xml",
		"/ui/index.html":       "text/html; charset=utf-8",
	} {
		r := serve(t, "GET", target, nil)
		if r.StatusCode != http.StatusOK || r.Header.Get("Content-Type") != ct {
			t.Errorf("GET %s: %d %q, want 200 %q", target, r.StatusCode, r.Header.Get("Content-Type"), ct)
			continue
		}
		if r.Header.Get("X-Content-Type-Options") != "nosniff" || r.Header.Get("Content-Security-Policy") == "" {
			t.Errorf("GET %s: missing security headers %v", target, r.Header)
		}
		etag := r.Header.Get("ETag")
		if etag == "" {
			t.Errorf("GET %s: no ETag", target)
			continue
		}
		again := serve(t, "GET", target, map[string]string{"If-None-Match": etag})
		if again.StatusCode != http.StatusNotModified {
			t.Errorf("GET %s with its ETag: status %d, want 304", target, again.StatusCode)
		}
	}
	if r := serve(t, "HEAD", "/ui/assets/app.js", nil); r.StatusCode != http.StatusOK || body(t, r) != "" {
		t.Errorf("HEAD app.js: status %d", r.StatusCode)
	}
}

func TestUnknownGoesToNotFound(t *testing.T) {
	t.Parallel()
	for _, target := range []string{"/ui/nope.js", "/ui/", "/ui/assets/", "/ui/../go.mod", "/index.html", "/api/v1/nope"} {
		r := serve(t, "GET", target, nil)
		if r.StatusCode != http.StatusNotFound || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("GET %s: %d %q, want the JSON 404", target, r.StatusCode, r.Header.Get("Content-Type"))
		}
	}
}

// TestNoInlineCodeOrMarkupInjection keeps the page within the CSP (no
// inline script, handler or style attribute in index.html) and the UI's
// own sources (web/src; the bundle holds React's, which we do not call
// that way) away from the APIs that parse strings as markup or code.
func TestNoInlineCodeOrMarkupInjection(t *testing.T) {
	t.Parallel()
	index, err := fs.ReadFile(files, "dist/index.html")
	if err != nil {
		t.Fatal(err)
	}
	scriptTag := regexp.MustCompile(`(?is)<script\b([^>]*)>(.*?)</script>`)
	inlineAttr := regexp.MustCompile(`(?i)\s(on[a-z]+|style)\s*=`)
	for _, m := range scriptTag.FindAllStringSubmatch(string(index), -1) {
		if !strings.Contains(m[1], "src=") || strings.TrimSpace(m[2]) != "" {
			t.Errorf("index.html: inline script %q", m[0])
		}
	}
	if m := inlineAttr.FindString(string(index)); m != "" {
		t.Errorf("index.html: inline attribute %q", m)
	}
	banned := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|dangerouslySetInnerHTML|document\.write|\beval\(|new Function\(|setTimeout\(\s*['"]`)
	src := filepath.Join("..", "..", "web", "src")
	n := 0
	err = filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		switch filepath.Ext(p) {
		case ".js", ".ts", ".tsx":
		default:
			return nil
		}
		n++
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if banned.MatchString(line) {
				t.Errorf("%s:%d: %s", p, i+1, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n < 10 {
		t.Errorf("checked only %d source files under %s", n, src)
	}
}

// TestReferencesResolve catches a renamed asset: every file index.html
// names is embedded.
func TestReferencesResolve(t *testing.T) {
	t.Parallel()
	assets, err := load()
	if err != nil {
		t.Fatal(err)
	}
	ref := regexp.MustCompile(`(?:src|href)="/ui/([^"]+)"`)
	refs := ref.FindAllStringSubmatch(string(assets["index.html"].body), -1)
	if len(refs) < 3 {
		t.Errorf("index.html names %d assets, want the icon, the script and the styles", len(refs))
	}
	for _, m := range refs {
		if assets[m[1]] == nil {
			t.Errorf("index.html refers to /ui/%s, which is not embedded", m[1])
		}
	}
}

// TestBundleSize keeps the UI small: what a browser downloads, gzipped,
// stays under 400 KB.
func TestBundleSize(t *testing.T) {
	t.Parallel()
	assets, err := load()
	if err != nil {
		t.Fatal(err)
	}
	var raw, gz int
	for name, a := range assets {
		var buf bytes.Buffer
		w, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
		_, _ = w.Write(a.body)
		_ = w.Close()
		raw += len(a.body)
		gz += buf.Len()
		t.Logf("%-20s %7d bytes, %6d gzip", name, len(a.body), buf.Len())
	}
	t.Logf("UI bundle: %d bytes, %.1f KB gzip (target < 400 KB)", raw, float64(gz)/1024)
	if gz > 400<<10 {
		t.Errorf("the UI bundle is %d KB gzip, over 400 KB", gz>>10)
	}
}
