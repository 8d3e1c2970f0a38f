// Package authtest gives tests an authenticated caller of the API: users
// and tokens made directly in the store, and a handler wrapper that sends a
// token on every request that carries none, so harnesses built before
// authentication keep working unchanged.
package authtest

import (
	"context"
	"crypto/rand"
	"net/http"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// Password is the password of every user this package makes.
const Password = "test-password"

// User makes user name with role (model.RoleAdmin or model.RoleUser) and
// returns a personal token of it valid for a day.
func User(t testing.TB, st *store.Store, name, role string) string {
	t.Helper()
	ctx := context.Background()
	// MinCost: the tests are not about hashing and run under -race.
	hash, err := bcrypt.GenerateFromPassword([]byte(Password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	u, err := st.UserCreate(ctx, name, role, string(hash))
	if err != nil {
		t.Fatal(err)
	}
	return Token(t, st, u.ID)
}

// Token makes a further token of user id.
func Token(t testing.TB, st *store.Store, userID int64) string {
	t.Helper()
	secret := "blg_" + rand.Text()
	if _, err := st.TokenCreate(context.Background(), model.Token{UserID: userID, Kind: model.TokenPersonal,
		Name: "test", Hash: store.HashToken(secret), ExpiresAt: time.Now().Add(24 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	return secret
}

// Admin makes the user "admin" (unless it exists) and returns a token of it.
func Admin(t testing.TB, st *store.Store) string {
	t.Helper()
	if u, err := st.UserGet(context.Background(), "admin"); err == nil {
		return Token(t, st, u.ID)
	}
	return User(t, st, "admin", model.RoleAdmin)
}

// Wrap sends token as the bearer of every request to h that has neither an
// Authorization header nor a session cookie.
func Wrap(h http.Handler, token string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "" {
			if _, err := r.Cookie("beluga_session"); err != nil {
				r.Header.Set("Authorization", "Bearer "+token)
			}
		}
		h.ServeHTTP(w, r)
	})
}
