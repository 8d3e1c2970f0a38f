package ui

import (
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/andybalholm/brotli"
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
	if !regexp.MustCompile(`<script type="module" crossorigin src="/ui/assets/app-[A-Za-z0-9_-]{8}\.js">`).MatchString(body(t, r)) {
		t.Error("index.html does not load the app module by its hashed name")
	}
}

// bundled are the script and the style index.html names (their names
// carry a hash of their content).
func bundled(t *testing.T) (js, css string) {
	t.Helper()
	index, err := fs.ReadFile(files, "dist/index.html")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`src="(/ui/assets/app-[^"]+\.js)"`).FindSubmatch(index)
	c := regexp.MustCompile(`href="(/ui/assets/[^"]+\.css)"`).FindSubmatch(index)
	if m == nil || c == nil {
		t.Fatalf("index.html names no script or no style:\n%s", index)
	}
	return string(m[1]), string(c[1])
}

// TestCacheControl: a file whose name carries its hash is kept a year;
// the page and anything else is revalidated.
func TestCacheControl(t *testing.T) {
	t.Parallel()
	for p, want := range map[string]string{
		"assets/app-BAlskcxL.js":    "public, max-age=31536000, immutable",
		"assets/index-VfoIWPz_.css": "public, max-age=31536000, immutable",
		"assets/app.js":             "no-cache",
		"assets/app-short.js":       "no-cache",
		"index.html":                "no-cache",
		"favicon.svg":               "no-cache",
		"app-BAlskcxL.js":           "no-cache",
	} {
		if got := cacheControl(p); got != want {
			t.Errorf("cacheControl(%q) = %q, want %q", p, got, want)
		}
	}
	js, css := bundled(t)
	for target, want := range map[string]string{"/": "no-cache", "/ui/favicon.svg": "no-cache",
		js: "public, max-age=31536000, immutable", css: "public, max-age=31536000, immutable"} {
		if got := serve(t, "GET", target, map[string]string{"Accept-Encoding": "br"}).Header.Get("Cache-Control"); got != want {
			t.Errorf("GET %s: Cache-Control %q, want %q", target, got, want)
		}
	}
}

func TestAssetTypesAndCaching(t *testing.T) {
	t.Parallel()
	js, css := bundled(t)
	for target, ct := range map[string]string{
		css:               "text/css; charset=utf-8",
		js:                "text/javascript; charset=utf-8",
		"/ui/favicon.svg": "image/svg+xml",
		"/ui/index.html":  "text/html; charset=utf-8",
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
	if r := serve(t, "HEAD", js, nil); r.StatusCode != http.StatusOK || body(t, r) != "" {
		t.Errorf("HEAD app.js: status %d", r.StatusCode)
	}
}

func TestUnknownGoesToNotFound(t *testing.T) {
	t.Parallel()
	js, _ := bundled(t)
	for _, target := range []string{"/ui/nope.js", "/ui/", "/ui/assets/", js + ".gz", js + ".br", "/ui/index.html.gz", "/ui/../go.mod", "/index.html", "/api/v1/nope"} {
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

// TestBundleSize keeps the UI small: what a browser downloads as served
// (the build's brotli, else gzip, files) stays under 400 KB, and every
// file the page needs was precompressed.
func TestBundleSize(t *testing.T) {
	t.Parallel()
	assets, err := load()
	if err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int{}
	for name, a := range assets {
		line := fmt.Sprintf("%-28s %7d bytes", name, len(a.body))
		for _, c := range a.coded {
			sizes[c.name] += len(c.body)
			line += fmt.Sprintf(", %6d %s", len(c.body), c.name)
		}
		sizes[""] += len(a.body)
		if len(a.coded) < len(codings) && name != "favicon.svg" {
			t.Errorf("%s: %d precompressed codings, want %d", name, len(a.coded), len(codings))
		}
		t.Log(line)
	}
	t.Logf("UI bundle: %d bytes, %.1f KB gzip, %.1f KB brotli as served (target < 400 KB)", sizes[""],
		float64(sizes["gzip"])/1024, float64(sizes["br"])/1024)
	if sizes["gzip"] > 400<<10 {
		t.Errorf("the UI bundle is %d KB gzip, over 400 KB", sizes["gzip"]>>10)
	}
}

// TestAssetsPrecompressed: a client gets each file as the build
// precompressed it, brotli when it takes brotli, else gzip (the same bytes
// once decoded, its own ETag, revalidated to a 304); one that takes
// neither, or refuses them with q=0, gets it as it is; all are told the
// answer varies by Accept-Encoding.
func TestAssetsPrecompressed(t *testing.T) {
	t.Parallel()
	js, css := bundled(t)
	decoders := map[string]func(io.Reader) (io.Reader, error){
		"gzip": func(r io.Reader) (io.Reader, error) { return gzip.NewReader(r) },
		"br":   func(r io.Reader) (io.Reader, error) { return brotli.NewReader(r), nil },
	}
	for _, target := range []string{"/", js, css} {
		plain := serve(t, "GET", target, nil)
		raw := body(t, plain)
		if plain.Header.Get("Content-Encoding") != "" || plain.Header.Get("Vary") != "Accept-Encoding" {
			t.Errorf("GET %s without Accept-Encoding: %v", target, plain.Header)
		}
		for accept, want := range map[string]string{"gzip, deflate, br": "br", "gzip, deflate": "gzip", "br;q=0, gzip": "gzip"} {
			r := serve(t, "GET", target, map[string]string{"Accept-Encoding": accept})
			if r.Header.Get("Content-Encoding") != want || r.Header.Get("Vary") != "Accept-Encoding" {
				t.Errorf("GET %s with %q: headers %v, want Content-Encoding %s", target, accept, r.Header, want)
				continue
			}
			coded := body(t, r)
			dec, err := decoders[want](strings.NewReader(coded))
			if err != nil {
				t.Fatalf("GET %s: %v", target, err)
			}
			got, err := io.ReadAll(dec)
			if err != nil || string(got) != raw {
				t.Errorf("GET %s: the %s body decodes to %d bytes (%v), want the %d of the file", target, want, len(got), err, len(raw))
			}
			t.Logf("%s: %d bytes, %d as %s", target, len(raw), len(coded), want)
			if len(coded) >= len(raw) {
				t.Errorf("GET %s: %s %d bytes, not smaller than %d", target, want, len(coded), len(raw))
			}
			etag := r.Header.Get("ETag")
			if etag == plain.Header.Get("ETag") {
				t.Errorf("GET %s: the %s and plain answers share the ETag %s", target, want, etag)
			}
			if again := serve(t, "GET", target, map[string]string{"Accept-Encoding": accept, "If-None-Match": etag}); again.StatusCode != http.StatusNotModified {
				t.Errorf("GET %s with the %s ETag: %d, want 304", target, want, again.StatusCode)
			}
		}
		if no := serve(t, "GET", target, map[string]string{"Accept-Encoding": "gzip;q=0, br;q=0, identity"}); no.Header.Get("Content-Encoding") != "" || body(t, no) != raw {
			t.Errorf("GET %s refusing gzip and br: Content-Encoding %q", target, no.Header.Get("Content-Encoding"))
		}
	}
}

func TestAccepts(t *testing.T) {
	t.Parallel()
	for h, want := range map[string]bool{"": false, "gzip": true, "br, gzip;q=0.5": true, "GZIP": true, "gzip;q=0": false,
		"gzip; q=0.0": false, "*": true, "identity": false, "deflate, br": false, "x-gzip": false} {
		if got := accepts(h, "gzip"); got != want {
			t.Errorf("accepts(%q, gzip) = %v, want %v", h, got, want)
		}
	}
	for h, want := range map[string]bool{"br": true, "gzip, deflate, br": true, "br;q=0": false, "gzip": false, "*": true} {
		if got := accepts(h, "br"); got != want {
			t.Errorf("accepts(%q, br) = %v, want %v", h, got, want)
		}
	}
}
