package registry

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"reflect"
	"sort"
	"strings"

	"github.com/go-zookeeper/zk"
	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/clusterkey"
)

// The registry is closed to non-members in two ways. Beluga's znodes carry
// ZooKeeper ACLs: only the digest user zkUser, whose password is derived
// from the cluster secret, may create, change or delete them; anyone may
// read them (they hold addresses, groups and load, which any member of the
// network can see anyway, and reading keeps zkCli useful to operators).
// And because a node could still appear through misconfiguration (an open
// ACL left on a directory by an older version, a ZooKeeper shared with
// something else), every registration is signed with an HMAC under a key of
// its own, bound to its role and address: a node whose signature does not
// verify is ignored and logged once.

const zkUser = "beluga"

// signedNode is the data of a registration znode when the registry has a
// secret.
type signedNode struct {
	Node json.RawMessage `json:"node"`
	Sig  string          `json:"sig"`
}

func (z *ZK) secured() bool { return !z.cfg.Secret.Empty() }

// acl is what Beluga's znodes are created with.
func (z *ZK) acl() []zk.ACL {
	if !z.secured() {
		return openACL
	}
	return append(zk.DigestACL(zk.PermAll, zkUser, z.cfg.Secret.ZKPassword()), zk.WorldACL(zk.PermRead)...)
}

// aclFor is the ACL to create path with: Beluga's at and under the root;
// directories above it may be shared with others and stay open.
func (z *ZK) aclFor(path string) []zk.ACL {
	if path == z.paths.root || strings.HasPrefix(path, z.paths.root+"/") {
		return z.acl()
	}
	return openACL
}

func nodeSig(key []byte, role Role, addr string, node []byte) string {
	m := hmac.New(sha256.New, key)
	fmt.Fprintf(m, "%s\n%s\n", role, addr)
	m.Write(node)
	return hex.EncodeToString(m.Sum(nil))
}

// encodeNode is the znode data of n.
func (z *ZK) encodeNode(n Node) ([]byte, error) {
	raw, err := json.Marshal(n)
	if err != nil || !z.secured() {
		return raw, err
	}
	return json.Marshal(signedNode{Node: raw, Sig: nodeSig(z.cfg.Secret.Key(clusterkey.PurposeSignature), n.Role, n.Addr, raw)})
}

// decodeNode parses znode data of role/addr; an error means the node is
// not one of the cluster's (or not Node JSON) and must be ignored.
func (z *ZK) decodeNode(role Role, addr string, data []byte) (Node, error) {
	raw := data
	if z.secured() {
		var s signedNode
		if err := json.Unmarshal(data, &s); err != nil || len(s.Node) == 0 {
			return Node{}, fmt.Errorf("not signed by the cluster (no signature)")
		}
		want := nodeSig(z.cfg.Secret.Key(clusterkey.PurposeSignature), role, addr, s.Node)
		if !hmac.Equal([]byte(want), []byte(s.Sig)) {
			return Node{}, fmt.Errorf("not signed by the cluster (bad signature)")
		}
		raw = s.Node
	}
	var n Node
	if err := json.Unmarshal(raw, &n); err != nil {
		return Node{}, fmt.Errorf("not Node JSON: %w", err)
	}
	n.Role, n.Addr = role, addr // the path is authoritative
	return n, nil
}

// ignoreNode logs a registration that is ignored, once per path and reason
// (a heartbeat rewrites it every few seconds).
func (z *ZK) ignoreNode(path string, err error) {
	key := path + "\x00" + err.Error()
	z.mu.Lock()
	seen := z.ignored[key]
	if !seen {
		if len(z.ignored) >= 1024 { // bounded: forget, at worst log again
			z.ignored = map[string]bool{}
		}
		z.ignored[key] = true
	}
	z.mu.Unlock()
	if !seen {
		z.log.Warn("ignoring a registration that is not the cluster's", zap.String("path", path), zap.Error(err))
	}
}

// authenticate gives the session the cluster's digest credentials (the
// client re-sends them on every reconnect of the session).
func (s *session) authenticate() error {
	if !s.z.secured() || s.authed {
		return nil
	}
	if err := s.conn.AddAuth("digest", []byte(zkUser+":"+s.z.cfg.Secret.ZKPassword())); err != nil {
		return fmt.Errorf("zookeeper digest auth: %w", err)
	}
	s.authed = true
	return nil
}

// secureDir sets Beluga's ACL on a directory that has another (created
// open, by an older version or by hand).
func (s *session) secureDir(dir string) error {
	if !s.z.secured() {
		return nil
	}
	have, _, err := s.conn.GetACL(dir)
	if err != nil {
		return fmt.Errorf("read acl of %s: %w", dir, err)
	}
	want := s.z.acl()
	if sameACL(have, want) {
		return nil
	}
	if _, err := s.conn.SetACL(dir, want, -1); err != nil {
		return fmt.Errorf("set acl of %s (created by someone else without the cluster's? delete it): %w", dir, err)
	}
	s.z.log.Info("zookeeper node was open: now writable by cluster members only", zap.String("path", dir))
	return nil
}

// secureTreeMax bounds the walk of secureTree: Beluga keeps a node per
// master, worker and candidate; a tree far larger is not ours to fix node
// by node at every session start.
const secureTreeMax = 10000

// secureTree sets Beluga's ACL on root and every znode under it that has
// another: nodes created open by an older version, by hand, or by anyone
// while the directories were open (a pre-existing rogue registration or
// election candidate would otherwise keep a door an attacker can write
// through). A node that vanishes meanwhile is skipped.
func (s *session) secureTree(root string) error {
	if !s.z.secured() {
		return nil
	}
	queue, seen := []string{root}, 0
	for len(queue) > 0 && seen < secureTreeMax {
		p := queue[0]
		queue = queue[1:]
		seen++
		if err := s.secureDir(p); err != nil {
			switch {
			case errors.Is(err, zk.ErrNoNode):
				continue
			case errors.Is(err, zk.ErrNoAuth) && !s.z.paths.isDir(p):
				// Someone else's node (their digest ACL): it cannot be
				// changed by us, and a registration in it is ignored
				// unless signed by the cluster. The directories must be ours.
				s.z.log.Warn("zookeeper node has a foreign ACL and cannot be re-secured; delete it", zap.String("path", p))
				continue
			}
			return err
		}
		kids, _, err := s.conn.Children(p)
		if errors.Is(err, zk.ErrNoNode) {
			continue
		}
		if err != nil {
			return fmt.Errorf("list %s: %w", p, err)
		}
		for _, k := range kids {
			queue = append(queue, path.Join(p, k))
		}
	}
	if len(queue) > 0 {
		s.z.log.Warn("zookeeper tree too large to re-secure every node; the rest keep their ACLs",
			zap.String("root", root), zap.Int("secured", seen), zap.Int("left", len(queue)))
	}
	return nil
}

func sameACL(a, b []zk.ACL) bool {
	key := func(l []zk.ACL) []string {
		out := make([]string, len(l))
		for i, x := range l {
			out[i] = fmt.Sprintf("%d|%s|%s", x.Perms, x.Scheme, x.ID)
		}
		sort.Strings(out)
		return out
	}
	return reflect.DeepEqual(key(a), key(b))
}
