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
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"regexp"
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
	// coded are the body precompressed at build (the .br and .gz files
	// beside it in dist/), by content coding, best first; the build leaves
	// out a coding that does not make the file smaller.
	coded []coding
	cache string // its Cache-Control (cacheControl)
}

type coding struct {
	name, ext string
	body      []byte
}

// codings are the precompressed files the build writes, preferred first.
var codings = []coding{{name: "br", ext: ".br"}, {name: "gzip", ext: ".gz"}}

// hashed is a name the build gives a file of the bundle: assets/NAME-HASH.EXT,
// the hash 8 characters of Vite's base64url alphabet.
var hashed = regexp.MustCompile(`^assets/[^/]+-[A-Za-z0-9_-]{8}\.[a-z]+$`)

// cacheControl is the Cache-Control of an asset at path p (under dist/): a
// hashed name is kept a year without asking again; any other (index.html,
// the icon) is revalidated each time, its ETag making an unchanged file a
// cheap 304.
func cacheControl(p string) string {
	if hashed.MatchString(p) {
		return "public, max-age=31536000, immutable"
	}
	return "no-cache"
}

// accepts is whether an Accept-Encoding header takes the content coding
// name: listed (or "*"), without q=0.
func accepts(header, name string) bool {
	for _, part := range strings.Split(header, ",") {
		coding, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		coding = strings.ToLower(strings.TrimSpace(coding))
		if coding != name && coding != "*" {
			continue
		}
		q := strings.ReplaceAll(strings.ToLower(params), " ", "")
		if q == "q=0" || q == "q=0.0" || q == "q=0.00" || q == "q=0.000" {
			return false
		}
		return true
	}
	return false
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
		h.Set("Cache-Control", a.cache)
		h.Add("Vary", "Accept-Encoding")
		body, etag := a.body, a.etag()
		for _, c := range a.coded {
			if accepts(r.Header.Get("Accept-Encoding"), c.name) {
				// Another representation: its own ETag.
				body, etag = c.body, strings.TrimSuffix(etag, `"`)+`-`+c.name+`"`
				h.Set("Content-Encoding", c.name)
				break
			}
		}
		h.Set("ETag", etag)
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
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
		for _, c := range codings {
			if strings.HasSuffix(p, c.ext) {
				return nil // taken with the file it is a coding of
			}
		}
		ct, ok := contentTypes[path.Ext(p)]
		if !ok {
			return fmt.Errorf("ui: embedded file %s has no known content type", p)
		}
		b, err := fs.ReadFile(root, p)
		if err != nil {
			return err
		}
		a := &asset{body: b, contentType: ct, cache: cacheControl(p), etag: sync.OnceValue(func() string {
			sum := sha256.Sum256(b)
			return `"` + hex.EncodeToString(sum[:12]) + `"`
		})}
		for _, c := range codings {
			if z, err := fs.ReadFile(root, p+c.ext); err == nil {
				a.coded = append(a.coded, coding{name: c.name, ext: c.ext, body: z})
			} else if !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
		out[p] = a
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
