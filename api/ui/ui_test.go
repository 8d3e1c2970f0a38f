package ui

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
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
	if !strings.Contains(body(t, r), `<script type="module" src="/ui/js/app.js">`) {
		t.Error("index.html does not load the app module")
	}
}

func TestAssetTypesAndCaching(t *testing.T) {
	t.Parallel()
	for target, ct := range map[string]string{
		"/ui/style.css":      "text/css; charset=utf-8",
		"/ui/js/app.js":      "text/javascript; charset=utf-8",
		"/ui/js/instance.js": "text/javascript; charset=utf-8",
		"/ui/favicon.svg":    "image/svg+xml",
		"/ui/index.html":     "text/html; charset=utf-8",
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
	if r := serve(t, "HEAD", "/ui/js/app.js", nil); r.StatusCode != http.StatusOK || body(t, r) != "" {
		t.Errorf("HEAD app.js: status %d", r.StatusCode)
	}
}

func TestUnknownGoesToNotFound(t *testing.T) {
	t.Parallel()
	for _, target := range []string{"/ui/nope.js", "/ui/", "/ui/js/", "/ui/../go.mod", "/index.html", "/api/v1/nope"} {
		r := serve(t, "GET", target, nil)
		if r.StatusCode != http.StatusNotFound || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("GET %s: %d %q, want the JSON 404", target, r.StatusCode, r.Header.Get("Content-Type"))
		}
	}
}

// TestNoInlineCodeOrMarkupInjection keeps the files within the CSP (no
// inline script, handler or style attribute) and the JavaScript away from
// the APIs that parse strings as markup or code.
func TestNoInlineCodeOrMarkupInjection(t *testing.T) {
	t.Parallel()
	root, err := fs.Sub(files, "static")
	if err != nil {
		t.Fatal(err)
	}
	scriptTag := regexp.MustCompile(`(?is)<script\b([^>]*)>(.*?)</script>`)
	inlineAttr := regexp.MustCompile(`(?i)\s(on[a-z]+|style)\s*=`)
	banned := regexp.MustCompile(`innerHTML|outerHTML|insertAdjacentHTML|document\.write|\beval\(|new Function\(|setTimeout\(\s*['"]`)
	err = fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		text := string(b)
		switch path.Ext(p) {
		case ".html":
			for _, m := range scriptTag.FindAllStringSubmatch(text, -1) {
				if !strings.Contains(m[1], "src=") || strings.TrimSpace(m[2]) != "" {
					t.Errorf("%s: inline script %q", p, m[0])
				}
			}
			if m := inlineAttr.FindString(text); m != "" {
				t.Errorf("%s: inline attribute %q", p, m)
			}
		case ".js":
			for i, line := range strings.Split(text, "\n") {
				if banned.MatchString(line) {
					t.Errorf("%s:%d: %s", p, i+1, strings.TrimSpace(line))
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestReferencesResolve catches a renamed module: every asset index.html
// names and every relative import of a module is embedded.
func TestReferencesResolve(t *testing.T) {
	t.Parallel()
	assets, err := load()
	if err != nil {
		t.Fatal(err)
	}
	ref := regexp.MustCompile(`(?:src|href)="/ui/([^"]+)"`)
	for _, m := range ref.FindAllStringSubmatch(string(assets["index.html"].body), -1) {
		if assets[m[1]] == nil {
			t.Errorf("index.html refers to /ui/%s, which is not embedded", m[1])
		}
	}
	imp := regexp.MustCompile(`(?m)^\s*(?:import|export)\b[^'"]*?from\s+'(\.[^']+)'|^import\s+'(\.[^']+)'`)
	imports := 0
	defer func() {
		if imports < 10 {
			t.Errorf("found only %d imports; the pattern no longer matches the modules", imports)
		}
	}()
	for name, a := range assets {
		if path.Ext(name) != ".js" {
			continue
		}
		for _, m := range imp.FindAllStringSubmatch(string(a.body), -1) {
			imports++
			target := path.Join(path.Dir(name), m[1]+m[2])
			if assets[target] == nil {
				t.Errorf("%s imports %s, which is not embedded", name, target)
			}
		}
	}
}
