package api

import (
	"bufio"
	"context"
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// openEvents opens GET /api/v1/events as token and returns the response
// (its status checked by the caller) and a channel closed when the server
// ended the body. The stream is closed at the test's end.
func (b *bundle) openEvents(token, query string) (*http.Response, <-chan struct{}) {
	b.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, "GET", b.srv.URL+"/api/v1/events?"+query, nil)
	if err != nil {
		b.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := b.srv.Client().Do(req)
	if err != nil {
		cancel()
		b.t.Fatal(err)
	}
	ended := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(ended)
		sc := bufio.NewScanner(res.Body)
		for sc.Scan() {
		}
	}()
	b.t.Cleanup(func() {
		cancel()
		res.Body.Close()
		wg.Wait()
	})
	return res, ended
}

// streamEndBound is the "few seconds" within which a revoked stream ends:
// one recheck interval, a query, and slack for a loaded machine.
const streamEndBound = streamRecheck + 4*time.Second

// TestEventStreamEndsOnRevocation: an open event stream ends within a few
// seconds after its token is revoked, its user is disabled, or its user's
// grant on a project it streams is removed (each stream stayed open before
// the fix, delivering every later event of the project).
func TestEventStreamEndsOnRevocation(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.mustProject("p")

	t.Run("token revoked", func(t *testing.T) {
		tok := b.tokenOf("tina", "user")
		var nt NewToken
		b.as(tok, "POST", "/api/v1/tokens", `{"name":"stream","expires_in":"1h"}`).want(t, http.StatusCreated).json(t, &nt)
		res, ended := b.openEvents(nt.Secret, "")
		if res.StatusCode != http.StatusOK {
			t.Fatalf("events: %d", res.StatusCode)
		}
		b.as(tok, "DELETE", fmt.Sprintf("/api/v1/tokens/%d", nt.ID), "").want(t, http.StatusNoContent)
		wait.Signal(t, streamEndBound, "the event stream to end after "+"its token was revoked", ended)
	})
	t.Run("user disabled", func(t *testing.T) {
		tok := b.tokenOf("ursula", "user")
		res, ended := b.openEvents(tok, "")
		if res.StatusCode != http.StatusOK {
			t.Fatalf("events: %d", res.StatusCode)
		}
		b.send("PATCH", "/api/v1/users/ursula", `{"disabled":true}`).want(t, http.StatusOK)
		wait.Signal(t, streamEndBound, "the event stream to end after "+"its user was disabled", ended)
	})
	t.Run("grant removed", func(t *testing.T) {
		tok := b.tokenOf("gus", "user")
		b.send("PUT", "/api/v1/projects/p/grants/gus", `{"level":"view"}`).want(t, http.StatusOK)
		res, ended := b.openEvents(tok, "project=p")
		if res.StatusCode != http.StatusOK {
			t.Fatalf("events: %d", res.StatusCode)
		}
		b.send("DELETE", "/api/v1/projects/p/grants/gus", "").want(t, http.StatusNoContent)
		wait.Signal(t, streamEndBound, "the event stream to end after "+"its grant was removed", ended)
	})
}

// TestEventStreamsPerUserQuota: a user past quota.event_streams_per_user
// gets 429 naming the setting; other users still stream.
func TestEventStreamsPerUserQuota(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.send("PUT", "/api/v1/settings/"+settingStreamsPerUser, `{"value":2}`).want(t, http.StatusOK)
	tok := b.tokenOf("sam", "user")
	for range 2 {
		if res, _ := b.openEvents(tok, ""); res.StatusCode != http.StatusOK {
			t.Fatalf("stream within the quota: %d", res.StatusCode)
		}
	}
	res, _ := b.openEvents(tok, "")
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusTooManyRequests || !strings.Contains(string(body), settingStreamsPerUser) || res.Header.Get("Retry-After") == "" {
		t.Fatalf("third stream: %d %s (Retry-After %q), want 429 naming %s with a Retry-After", res.StatusCode, body, res.Header.Get("Retry-After"), settingStreamsPerUser)
	}
	if res, _ := b.openEvents(b.tokenOf("other", "user"), ""); res.StatusCode != http.StatusOK {
		t.Fatalf("another user's stream: %d", res.StatusCode)
	}
}

// TestEventStreamsSharePoll: without a publisher in the process (a
// cluster's API server), N open streams read the outbox through one shared
// poll, so the database's queries do not grow with N. Before, each stream
// polled twice every 250 ms: 40 streams made ~640 queries a second.
func TestEventStreamsSharePoll(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.send("PUT", "/api/v1/settings/"+settingStreamsPerUser, `{"value":100}`).want(t, http.StatusOK)
	const streams = 40
	tok := b.tokenOf("watcher", "user")
	for range streams {
		if res, _ := b.openEvents(tok, ""); res.StatusCode != http.StatusOK {
			t.Fatalf("events: %d", res.StatusCode)
		}
	}
	// A window of wall time is what a rate is measured over; the bound
	// is far from both sides (shared: ~4 polls and one recheck a second;
	// per stream: hundreds), so a slow machine does not flip it.
	before := b.store.Queries()
	<-time.After(2 * time.Second)
	n := b.store.Queries() - before
	if n > 60 {
		t.Fatalf("%d queries in 2 s with %d open streams, want at most 60 (one shared poll)", n, streams)
	}
	t.Logf("%d queries in 2 s with %d open streams", n, streams)
}

// TestTokenCannotOutliveItsMaker: a token made with a token expires no
// later than the token that made it (a 12 h session minted a year's token
// that outlived the session's revocation by logout).
func TestTokenCannotOutliveItsMaker(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	tok := b.tokenOf("mia", "user") // expires in 24 h
	r := b.as(tok, "POST", "/api/v1/tokens", `{"name":"long","expires_in":"720h"}`)
	if e := r.wantError(t, http.StatusBadRequest, CodeBadRequest); !strings.Contains(e.Message, "outlive") {
		t.Fatalf("message %q does not say why", e.Message)
	}
	var nt NewToken
	b.as(tok, "POST", "/api/v1/tokens", `{"name":"short","expires_in":"2h"}`).want(t, http.StatusCreated).json(t, &nt)
	// The child cannot extend itself either.
	b.as(nt.Secret, "POST", "/api/v1/tokens", `{"name":"grandchild","expires_in":"3h"}`).wantError(t, http.StatusBadRequest, CodeBadRequest)
	b.as(nt.Secret, "POST", "/api/v1/tokens", `{"name":"grandchild","expires_in":"1h"}`).want(t, http.StatusCreated)
}

// TestLoginMakesALongToken: a token longer than a session is made with the
// password (POST /login with personal_token), as beluga login does; bad
// terms are refused before the password is tried, and a wrong password
// makes nothing.
func TestLoginMakesALongToken(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.send("POST", "/api/v1/users", `{"name":"lou","password":"lou-password"}`).want(t, http.StatusCreated)
	login := func(pw, tok string) resp {
		return b.as("", "POST", "/api/v1/login", `{"username":"lou","password":"`+pw+`","personal_token":`+tok+`}`)
	}
	login("wrong-password", `{"name":"cli","expires_in":"720h"}`).wantError(t, http.StatusUnauthorized, CodeUnauthorized)
	if e := login("lou-password", `{"name":"cli","expires_in":"forever"}`).wantError(t, http.StatusBadRequest, CodeBadRequest); !strings.Contains(e.Message, "forever") {
		t.Fatalf("message %q does not name the bad term", e.Message)
	}
	login("lou-password", `{"name":"","expires_in":"720h"}`).wantError(t, http.StatusBadRequest, CodeBadRequest)
	var lr LoginResponse
	r := login("lou-password", `{"name":"cli","expires_in":"720h"}`).want(t, http.StatusOK)
	r.json(t, &lr)
	if lr.TokenID == 0 || lr.ExpiresAt.Before(time.Now().Add(719*time.Hour)) || r.header.Get("Set-Cookie") != "" {
		t.Fatalf("login for a token: %+v, cookie %q", lr, r.header.Get("Set-Cookie"))
	}
	var ts struct{ Items []Token }
	b.as(lr.Token, "GET", "/api/v1/tokens", "").want(t, http.StatusOK).json(t, &ts)
	if len(ts.Items) != 1 || ts.Items[0].ID != lr.TokenID || ts.Items[0].Name != "cli" {
		t.Fatalf("tokens %+v, want the one made at login", ts.Items)
	}
}
