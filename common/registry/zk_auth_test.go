package registry

import (
	"context"
	"encoding/json"
	"errors"
	testwait "github.com/beluga-scheduler/beluga/testkit/wait"
	"strings"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/beluga-scheduler/beluga/common/clusterkey"
)

func testSecret(t *testing.T, b string) clusterkey.Secret {
	t.Helper()
	s, err := clusterkey.New([]byte(b))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// rawZK is a plain client: what an attacker on the network has.
func rawZK(t *testing.T, addr string) *zk.Conn {
	t.Helper()
	c, _, err := zk.Connect([]string{addr}, 4*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// TestZKClosedToNonMembers: with the cluster secret the registry's znodes
// carry digest ACLs, so a client without it cannot register a worker; and a
// node whose data is not signed by the cluster (written where the ACL
// allows it, or by a member of another cluster) is ignored and logged once.
func TestZKClosedToNonMembers(t *testing.T) {
	srv := sharedZK(t)
	root := testRoot()
	core, logs := observer.New(zapcore.InfoLevel)
	sec := testSecret(t, "the cluster secret, 32 bytes...")
	z := NewZK(ZKConfig{Servers: []string{srv.Addr()}, Root: root, SessionTimeout: 4 * time.Second, Secret: sec}, zap.New(core))
	t.Cleanup(z.Stop)
	start(t, z)
	ctx := context.Background()
	if err := z.Register(ctx, worker("10.0.0.1:1", 0)); err != nil {
		t.Fatal(err)
	}

	raw := rawZK(t, srv.Addr())
	fake, _ := json.Marshal(worker("10.6.6.6:1", 0))
	_, err := raw.Create(root+"/nodes/workers/10.6.6.6:1", fake, zk.FlagEphemeral, zk.WorldACL(zk.PermAll))
	if !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("unauthenticated create under the workers path: %v, want %v", err, zk.ErrNoAuth)
	}
	if _, err := raw.Set(root+"/nodes/workers/10.0.0.1:1", fake, -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("unauthenticated write of a worker's node: %v, want %v", err, zk.ErrNoAuth)
	}
	if err := raw.Delete(root+"/nodes/workers/10.0.0.1:1", -1); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("unauthenticated delete of a worker's node: %v, want %v", err, zk.ErrNoAuth)
	}
	if _, err := raw.Create(root+"/election/n_", []byte(`{"id":"evil:1"}`), zk.FlagEphemeralSequential, zk.WorldACL(zk.PermAll)); !errors.Is(err, zk.ErrNoAuth) {
		t.Fatalf("unauthenticated candidate in the election: %v, want %v", err, zk.ErrNoAuth)
	}
	if data, _, err := raw.Get(root + "/nodes/workers/10.0.0.1:1"); err != nil || len(data) == 0 {
		t.Fatalf("world cannot read a registration: %v", err)
	}

	// Through the ACL with the cluster's digest but another signing key (a
	// misconfiguration): the node is ignored.
	member := rawZK(t, srv.Addr())
	if err := member.AddAuth("digest", []byte(zkUser+":"+sec.ZKPassword())); err != nil {
		t.Fatal(err)
	}
	other := &ZK{cfg: ZKConfig{Secret: testSecret(t, "another cluster's secret......")}}
	forged, err := other.encodeNode(worker("10.6.6.6:1", 0))
	if err != nil {
		t.Fatal(err)
	}
	for i, data := range [][]byte{forged, fake} { // bad signature, then none
		p := root + "/nodes/workers/10.6.6.6:1"
		if _, err := member.Create(p, data, zk.FlagEphemeral, z.acl()); err != nil {
			t.Fatal(err)
		}
		// Each node is seen (and logged) before it is deleted: a node
		// created and deleted between two reads of the view is never seen.
		testwait.Until(t, 5*time.Second, "the unsigned node is logged", func() bool {
			return logs.FilterMessage("ignoring a registration that is not the cluster's").Len() >= i+1
		})
		if hasNode(z, RoleWorker, "10.6.6.6:1") {
			t.Fatal("a node not signed by the cluster is listed")
		}
		if err := member.Delete(p, -1); err != nil {
			t.Fatal(err)
		}
	}
	testwait.Until(t, 5*time.Second, "both ignored nodes logged", func() bool {
		return logs.FilterMessage("ignoring a registration that is not the cluster's").Len() >= 2
	})
	// Heartbeats rewrite a node every few seconds: it is logged once.
	p := root + "/nodes/workers/10.6.6.7:1"
	if _, err := member.Create(p, forged, zk.FlagEphemeral, z.acl()); err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 5*time.Second, "third logged", func() bool {
		return logs.FilterMessage("ignoring a registration that is not the cluster's").Len() >= 3
	})
	for range 3 {
		if _, err := member.Set(p, forged, -1); err != nil {
			t.Fatal(err)
		}
	}
	if err := z.Register(ctx, worker("10.0.0.1:1", 5)); err != nil { // a change after the sets, to wait on
		t.Fatal(err)
	}
	testwait.Until(t, 5*time.Second, "own heartbeat seen", func() bool {
		n, _ := findNode(z, RoleWorker, "10.0.0.1:1")
		return n.Heartbeat.Running == 5
	})
	if n := logs.FilterMessage("ignoring a registration that is not the cluster's").Len(); n != 3 {
		t.Fatalf("%d lines for three ignored nodes, want 3 (once each)", n)
	}
	if id, ep, ok := z.LeaderTerm(); ok {
		t.Fatalf("leader %s epoch %d with no campaign", id, ep)
	}
}

// The leader's epoch as workers read it from the registry is the epoch of
// the term the leader holds.
func TestZKLeaderTermEpoch(t *testing.T) {
	srv := sharedZK(t)
	root := testRoot()
	sec := testSecret(t, "the cluster secret, 32 bytes...")
	mk := func() *ZK {
		z := NewZK(ZKConfig{Servers: []string{srv.Addr()}, Root: root, SessionTimeout: 4 * time.Second, Secret: sec}, zap.NewNop())
		t.Cleanup(z.Stop)
		start(t, z)
		return z
	}
	a, b := mk(), mk()
	term, err := a.Campaign(context.Background(), "m1:1")
	if err != nil {
		t.Fatal(err)
	}
	testwait.Until(t, 5*time.Second, "b sees a lead in its epoch", func() bool {
		id, ep, ok := b.LeaderTerm()
		return ok && id == "m1:1" && ep == term.Epoch
	})
}

// TestZKResecuresOpenNodesAtStart: znodes under the root left open (by an
// older version, by hand, or by an attacker while the directories were
// open: a rogue registration, an election candidate, a lock) get the
// cluster's ACL when the registry starts, so nobody without the secret can
// change or delete them afterwards.
func TestZKResecuresOpenNodesAtStart(t *testing.T) {
	srv := sharedZK(t)
	root := testRoot()
	raw := rawZK(t, srv.Addr())
	open := zk.WorldACL(zk.PermAll)
	nodes := []string{root + "/nodes/workers/10.9.9.9:1", root + "/election/n_0000000007", root + "/lock/failover"}
	for _, p := range nodes {
		if err := ensurePath(raw, p, func(string) []zk.ACL { return open }); err != nil {
			t.Fatal(err)
		}
	}
	sec := testSecret(t, "the cluster secret, 32 bytes...")
	z := NewZK(ZKConfig{Servers: []string{srv.Addr()}, Root: root, SessionTimeout: 4 * time.Second, Secret: sec}, zap.NewNop())
	t.Cleanup(z.Stop)
	start(t, z)
	for _, p := range append(nodes, root, root+"/nodes", root+"/lock") {
		acl, _, err := raw.GetACL(p)
		if err != nil {
			t.Fatal(err)
		}
		// ZooKeeper shows a digest ACL's hash masked to the non-owner: the
		// user and the permissions are what a read can compare.
		if !sameACL(maskDigest(acl), maskDigest(z.acl())) {
			t.Errorf("%s: ACL %v after start, want the cluster's %v", p, acl, z.acl())
		}
	}
	for _, p := range nodes {
		if _, err := raw.Set(p, []byte("x"), -1); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("unauthenticated write of %s after start: %v, want %v", p, err, zk.ErrNoAuth)
		}
		if err := raw.Delete(p, -1); !errors.Is(err, zk.ErrNoAuth) {
			t.Errorf("unauthenticated delete of %s after start: %v, want %v", p, err, zk.ErrNoAuth)
		}
	}
}

func maskDigest(l []zk.ACL) []zk.ACL {
	out := make([]zk.ACL, len(l))
	for i, a := range l {
		if user, _, ok := strings.Cut(a.ID, ":"); ok && a.Scheme == "digest" {
			a.ID = user
		}
		out[i] = a
	}
	return out
}
