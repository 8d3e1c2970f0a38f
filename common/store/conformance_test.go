package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
	schema "github.com/beluga-scheduler/beluga/sql"
)

// TestAccountsSettingsAndChannels runs the store's methods for users and
// tokens, settings (an upsert), webhook subscriptions with their
// deliveries, and alert channels on every dialect: each writes, reads back
// and deletes, and a duplicate or a missing name gives the sentinel error.
func TestAccountsSettingsAndChannels(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Microsecond)

		u, err := s.UserCreate(ctx, "ann", model.RoleUser, "hash")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.UserCreate(ctx, "ann", model.RoleUser, "hash"); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("duplicate user: %v, want ErrConflict", err)
		}
		if n, err := s.UserCount(ctx); err != nil || n != 1 {
			t.Fatalf("count users: %d, %v", n, err)
		}
		if us, err := s.UserList(ctx); err != nil || len(us) != 1 || us[0].Name != "ann" || us[0].Disabled {
			t.Fatalf("list users: %+v, %v", us, err)
		}
		tok, err := s.TokenCreate(ctx, model.Token{UserID: u.ID, Kind: model.TokenPersonal, Name: "ci",
			Hash: "h1", ExpiresAt: now.Add(time.Hour)})
		if err != nil {
			t.Fatal(err)
		}
		if got, gt, err := s.TokenAuthenticate(ctx, "h1", now); err != nil || got.ID != u.ID || gt.ID != tok.ID {
			t.Fatalf("authenticate: %+v %+v %v", got, gt, err)
		}
		if _, _, err := s.TokenAuthenticate(ctx, "h1", now.Add(2*time.Hour)); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("an expired token: %v, want ErrNotFound", err)
		}
		if ts, err := s.TokenList(ctx, u.ID, model.TokenPersonal); err != nil || len(ts) != 1 || ts[0].Name != "ci" {
			t.Fatalf("list tokens: %+v, %v", ts, err)
		}
		if err := s.TokenDelete(ctx, u.ID, tok.ID); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.TokenAuthenticate(ctx, "h1", now); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a deleted token: %v, want ErrNotFound", err)
		}
		p, err := s.ProjectCreateOwned(ctx, "mine", "", "", u.ID, u.Name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.ProjectCreateOwned(ctx, "mine", "", "", u.ID, u.Name); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("duplicate owned project: %v, want ErrConflict", err)
		}
		if lv, err := s.GrantLevels(ctx, u.ID); err != nil || lv[p.ID] != model.GrantOwner {
			t.Fatalf("levels: %v, %v", lv, err)
		}
		if ps, err := s.ProjectList(ctx); err != nil || len(ps) != 1 || ps[0].Name != "mine" {
			t.Fatalf("list projects: %+v, %v", ps, err)
		}

		for _, v := range []string{"3", "5"} { // insert, then the upsert's update
			if _, err := s.SettingPut(ctx, "quota.log_reads_per_user", v); err != nil {
				t.Fatal(err)
			}
		}
		if n, err := s.SettingInt(ctx, "quota.log_reads_per_user", 4); err != nil || n != 5 {
			t.Fatalf("setting: %d, %v, want 5", n, err)
		}
		if n, err := s.SettingInt(ctx, "no.such", 7); err != nil || n != 7 {
			t.Fatalf("missing setting: %d, %v, want the default 7", n, err)
		}
		if all, err := s.SettingList(ctx); err != nil || len(all) < 5 {
			t.Fatalf("settings: %+v, %v", all, err)
		}

		sub, created, err := s.SubscriptionPut(ctx, model.Subscription{Name: "hook", URL: "https://example.test/h"})
		if err != nil || !created {
			t.Fatalf("put subscription: %v, created %v", err, created)
		}
		if _, created, err := s.SubscriptionPut(ctx, model.Subscription{Name: "hook", URL: "https://example.test/2"}); err != nil || created {
			t.Fatalf("update subscription: %v, created %v", err, created)
		}
		if got, err := s.SubscriptionGet(ctx, "hook"); err != nil || got.URL != "https://example.test/2" {
			t.Fatalf("get subscription: %+v, %v", got, err)
		}
		if err := s.SubscriptionRecordDelivery(ctx, sub.ID, model.Delivery{EventSeq: 1, Attempt: 1, StatusCode: 200, OK: true, Time: now}, true); err != nil {
			t.Fatal(err)
		}
		if ds, err := s.SubscriptionDeliveries(ctx, "hook", 10); err != nil || len(ds) != 1 || !ds[0].OK || ds[0].StatusCode != 200 {
			t.Fatalf("deliveries: %+v, %v", ds, err)
		}
		if subs, err := s.SubscriptionList(ctx); err != nil || len(subs) != 1 || subs[0].Cursor != 1 {
			t.Fatalf("subscriptions: %+v, %v (want the cursor at the delivered event)", subs, err)
		}
		if err := s.SubscriptionDelete(ctx, "hook"); err != nil {
			t.Fatal(err)
		}
		if _, err := s.SubscriptionGet(ctx, "hook"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("deleted subscription: %v, want ErrNotFound", err)
		}

		ch := model.AlertChannel{Name: "ops", Kind: "webhook", ConfigJSON: []byte(`{"url":"https://example.test/a"}`)}
		if _, created, err := s.AlertChannelPut(ctx, ch); err != nil || !created {
			t.Fatalf("put alert channel: %v, created %v", err, created)
		}
		if got, err := s.AlertChannelGet(ctx, "ops"); err != nil || got.Kind != "webhook" || string(got.ConfigJSON) != string(ch.ConfigJSON) {
			t.Fatalf("get alert channel: %+v, %v", got, err)
		}
		if cs, err := s.AlertChannelList(ctx); err != nil || len(cs) != 1 {
			t.Fatalf("alert channels: %+v, %v", cs, err)
		}
		if err := s.AlertChannelDelete(ctx, "ops"); err != nil {
			t.Fatal(err)
		}
		if err := s.AlertChannelDelete(ctx, "ops"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("delete a deleted channel: %v, want ErrNotFound", err)
		}
	})
}

// TestAlertsLifecycle: planned alerts are written once per key in a fenced
// transaction that moves the planner's cursor, come due, record their
// attempts and are listed; on every dialect.
func TestAlertsLifecycle(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		now := time.Now().UTC().Truncate(time.Microsecond)
		if _, _, err := s.AlertChannelPut(ctx, model.AlertChannel{Name: "ops", Kind: "webhook", ConfigJSON: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
		if miss, err := s.AlertChannelMissing(ctx, []string{"ops", "pager"}); err != nil || len(miss) != 1 || miss[0] != "pager" {
			t.Fatalf("missing channels: %v, %v", miss, err)
		}
		if err := s.TermBegin(ctx, 1, "m"); err != nil {
			t.Fatal(err)
		}
		term := s.Term(1)
		a := model.Alert{Key: "instance 7 failed/ops", Channel: "ops", Kind: "failure", InstanceID: 7, Message: "failed",
			State: model.AlertPending, NextAt: now, CreatedAt: now}
		got, err := term.AlertAdd(ctx, []model.Alert{a}, 42)
		if err != nil || len(got) != 1 {
			t.Fatalf("add alerts: %+v, %v", got, err)
		}
		if again, err := term.AlertAdd(ctx, []model.Alert{a}, 43); err != nil || len(again) != 0 {
			t.Fatalf("the same key again: %+v, %v, want nothing written", again, err)
		}
		if c, err := s.AlertCursor(ctx); err != nil || c != 43 {
			t.Fatalf("cursor: %d, %v, want 43", c, err)
		}
		if err := s.TermBegin(ctx, 2, "m2"); err != nil {
			t.Fatal(err)
		}
		if _, err := term.AlertAdd(ctx, []model.Alert{{Key: "k2", Channel: "ops", Kind: "failure", State: model.AlertPending,
			NextAt: now, CreatedAt: now}}, 44); !errors.Is(err, store.ErrFenced) {
			t.Fatalf("alerts of an ended term: %v, want ErrFenced", err)
		}
		test, err := s.AlertAddTest(ctx, "ops")
		if err != nil {
			t.Fatal(err)
		}
		due, err := s.AlertDue(ctx, now.Add(time.Second), 10)
		if err != nil || len(due) != 2 {
			t.Fatalf("due: %+v, %v, want the planned and the test alert", due, err)
		}
		if err := s.AlertAttempt(ctx, got[0].ID, model.AlertPending, "503", now.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		if err := s.AlertAttempt(ctx, test.ID, model.AlertSent, "", now); err != nil {
			t.Fatal(err)
		}
		if due, err := s.AlertDue(ctx, now.Add(time.Second), 10); err != nil || len(due) != 0 {
			t.Fatalf("due after the attempts: %+v, %v, want none", due, err)
		}
		one, err := s.AlertGet(ctx, got[0].ID)
		if err != nil || one.Attempts != 1 || one.LastError != "503" || one.State != model.AlertPending {
			t.Fatalf("alert after a failed attempt: %+v, %v", one, err)
		}
		if list, err := s.AlertList(ctx, store.AlertFilter{Instance: 7}); err != nil || len(list) != 1 {
			t.Fatalf("alerts of instance 7: %+v, %v", list, err)
		}
		if _, err := s.AlertGet(ctx, 999999); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a missing alert: %v, want ErrNotFound", err)
		}
	})
}

// TestMigrateTogether: masters that start together migrate one at a time
// (the dialect's migration lock): on each server dialect, four stores
// migrating one fresh database at once apply every file exactly once
// between them, and none fails.
func TestMigrateTogether(t *testing.T) {
	for _, d := range testDialects {
		if d.name == "sqlite" { // one file, one writer: nothing to race
			continue
		}
		t.Run(d.name, func(t *testing.T) {
			ctx := context.Background()
			url := d.url(t)
			const n = 4
			applied := make(chan []string, n)
			errs := make(chan error, n)
			for range n {
				s, err := store.Open(ctx, url, zap.NewNop())
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { s.Close() })
				go func() {
					a, err := s.Migrate(ctx)
					applied <- a
					errs <- err
				}()
			}
			seen := map[string]int{}
			for range n {
				if err := <-errs; err != nil {
					t.Fatalf("migrate: %v", err)
				}
				for _, f := range <-applied {
					seen[f]++
				}
			}
			migs, err := schema.For(d.name)
			if err != nil {
				t.Fatal(err)
			}
			if len(seen) != len(migs) {
				t.Fatalf("%d files applied, want %d: %v", len(seen), len(migs), seen)
			}
			for f, k := range seen {
				if k != 1 {
					t.Fatalf("%s applied %d times", f, k)
				}
			}
		})
	}
}
