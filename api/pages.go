package api

import (
	"encoding/base64"
	"net/http"
	"strings"

	"github.com/beluga-scheduler/beluga/common/store"
)

// namePage is a list request's page by name: ?limit=&cursor=&prefix=.
// paged is false when none is given: the list answers everything, as
// before pages, for the clients written then.
type namePage struct {
	store.NamePage
	paged bool
}

// pageQuery reads limit, cursor and prefix. The cursor is the opaque
// next_cursor of the page before (the key of its last item); a prefix is
// a name's start, so it follows the name rule's characters.
func pageQuery(r *http.Request) (namePage, error) {
	q := r.URL.Query()
	var p namePage
	p.paged = q.Has("limit") || q.Has("cursor") || q.Has("prefix")
	limit, err := queryInt(r, "limit", 50, 1, store.MaxPage)
	if err != nil {
		return p, err
	}
	p.Limit = int(limit)
	if p.Prefix = q.Get("prefix"); p.Prefix != "" && !validName(p.Prefix) {
		return p, badRequest("query parameter prefix: %q is not the start of a valid name: %s", p.Prefix, nameRule)
	}
	p.After, err = cursorKey(q.Get("cursor"))
	return p, err
}

// cursorKey is the key a next_cursor c carries ("" for none).
func cursorKey(c string) (string, error) {
	if c == "" {
		return "", nil
	}
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil || len(b) == 0 {
		return "", badRequest("query parameter cursor: %q is not a next_cursor this list gave; start again without it", c)
	}
	return string(b), nil
}

// nextCursor is the cursor of the page after the one ending at key.
func nextCursor(key ...string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strings.Join(key, "/")))
}
