// Package ui is Beluga's web UI: the bundle Vite builds from web/ (React
// and TypeScript), committed under dist/ and embedded in the binary, so a
// plain go build serves the full UI without Node. It is served next to the
// REST API, which is all the UI talks to. `make ui` rebuilds dist/;
// `make ui-check` fails when dist/ is not what web/ builds.
package ui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

//go:embed dist
var files embed.FS

// AssetPrefix is the URL path the assets are served under.
const AssetPrefix = "/ui/"

// ContentSecurityPolicy allows only the UI's own files and same-origin API
// calls: no inline script or style, no framing, no plugins.
const ContentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// contentTypes are set explicitly: the platform's MIME table may lack .js
// or map it to an old type, and nosniff makes the browser trust ours.
var contentTypes = map[string]string{
	".html": "text/html; charset=utf-8",
	".css":  "text/css; charset=utf-8",
	".js":   "text/javascript; charset=utf-8",
	".svg":  "image/svg+xml",
}

type asset struct {
	body        []byte
	contentType string
	etag        func() string // hashed on first use: hashing all at start-up kept every file's pages resident
}

// Handler serves the app at "/" and the assets under AssetPrefix; any
// other path, or an asset that does not exist, goes to notFound.
func Handler(notFound http.Handler) http.Handler {
	assets, err := load()
	if err != nil {
		// The files are embedded at build time; this is a programming error.
		panic(err)
	}
	index := assets["index.html"]
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var a *asset
		switch {
		case r.URL.Path == "/":
			a = index
		case strings.HasPrefix(r.URL.Path, AssetPrefix):
			a = assets[strings.TrimPrefix(r.URL.Path, AssetPrefix)]
		}
		if a == nil {
			notFound.ServeHTTP(w, r)
			return
		}
		h := w.Header()
		h.Set("Content-Type", a.contentType)
		h.Set("Content-Security-Policy", ContentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("X-Frame-Options", "DENY")
		h.Set("Referrer-Policy", "no-referrer")
		// Revalidate every time: a new binary serves new files under the
		// same names, and the ETag makes an unchanged file a cheap 304.
		h.Set("Cache-Control", "no-cache")
		h.Set("ETag", a.etag())
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(a.body))
	})
}

// load reads every embedded file with a known type, keyed by its path
// under dist/.
func load() (map[string]*asset, error) {
	root, err := fs.Sub(files, "dist")
	if err != nil {
		return nil, err
	}
	out := map[string]*asset{}
	err = fs.WalkDir(root, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		ct, ok := contentTypes[path.Ext(p)]
		if !ok {
			return fmt.Errorf("ui: embedded file %s has no known content type", p)
		}
		b, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		out[p] = &asset{body: b, contentType: ct, etag: sync.OnceValue(func() string {
			sum := sha256.Sum256(b)
			return `"` + hex.EncodeToString(sum[:12]) + `"`
		})}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ui: load embedded files: %w", err)
	}
	if out["index.html"] == nil {
		return nil, fmt.Errorf("ui: index.html is not embedded")
	}
	return out, nil
}
