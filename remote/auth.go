package remote

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
	"unicode"

	"github.com/panjf2000/gnet/v2"
	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/remote/frame"
	"github.com/beluga-scheduler/beluga/remote/message"
)

// Mutual authentication of every connection (docs/architecture.md, "Cluster
// trust"). Before any other frame, the dialler and the listener prove to
// each other that they hold the cluster's handshake key, and each names
// itself (role and address), bound into the proofs:
//
//	client -> server  hello      role_c, id_c, nonce_c
//	server -> client  challenge  role_s, id_s, nonce_s, HMAC(key, "server" | transcript)
//	client -> server  proof      HMAC(key, "client" | transcript)
//	server -> client  ok
//
// transcript = role_c, id_c, nonce_c, role_s, id_s, nonce_s (each length
// prefixed). Both nonces are fresh random 32 bytes, so no proof can be
// replayed on another connection, and the labels keep a server's proof from
// serving as a client's. Until the server has checked the proof (and the
// client the challenge), the only frames read are these, of at most
// maxHandshakeBody bytes: nothing else reaches a handler.
//
// What this does not do: protect a connection's later frames from an
// attacker on the path who can inject into a TCP stream; that needs TLS.

// Auth turns the handshake on for a Server or Client (Options.Auth).
type Auth struct {
	// Key is the handshake key, derived from the cluster secret
	// (clusterkey.Secret.Key(clusterkey.PurposeHandshake)).
	Key []byte
	// Role is what this process is on the cluster: RoleMaster, RoleWorker or RoleAPI.
	Role string
	// ID names this process within its role, its advertised address; read
	// at each handshake (a process learns its address once it listens).
	ID func() string
}

// Roles a peer can prove.
const (
	RoleMaster = "master"
	RoleWorker = "worker"
	RoleAPI    = "api"
)

// Identity is who the other end of a connection proved to be.
type Identity struct {
	Role string
	ID   string
}

func (i Identity) String() string { return i.Role + " " + i.ID }

// PeerIdentity returns the authenticated identity of p. ok is false for a
// connection without the handshake (a transport without Options.Auth) or a
// peer that is not a connection.
func PeerIdentity(p Peer) (Identity, bool) {
	c, ok := p.(*conn)
	if !ok || !c.authed.Load() {
		return Identity{}, false
	}
	return c.peer, true
}

// Handshake frame types: outside message.Type's range of messages, never
// decoded as messages.
const (
	typeHello     message.Type = 0xF1
	typeChallenge message.Type = 0xF2
	typeProof     message.Type = 0xF3
	typeOK        message.Type = 0xF4
)

const (
	nonceLen = 32
	macLen   = sha256.Size
	// maxHandshakeBody caps what an unauthenticated peer can make us buffer.
	maxHandshakeBody = 1024
	maxIDLen         = 256
)

// handshake is one connection's state until it is authenticated; only the
// event loop touches it.
type handshake struct {
	server bool
	step   message.Type // the frame expected next
	self   Identity
	nonceC []byte
	nonceS []byte
	peer   Identity
	logged bool // its failure is logged
}

var errAuth = errors.New("authentication failed")

func validIdentity(id Identity) error {
	switch id.Role {
	case RoleMaster, RoleWorker, RoleAPI:
	default:
		return fmt.Errorf("%w: unknown role %q", errAuth, trunc(id.Role))
	}
	if id.ID == "" || len(id.ID) > maxIDLen {
		return fmt.Errorf("%w: identity of %d bytes", errAuth, len(id.ID))
	}
	for _, r := range id.ID {
		if !unicode.IsPrint(r) || r == ' ' {
			return fmt.Errorf("%w: identity %q has unprintable characters", errAuth, trunc(id.ID))
		}
	}
	return nil
}

func trunc(s string) string {
	if len(s) > 64 {
		return s[:64] + "..."
	}
	return s
}

// transcriptMAC is the proof of one side: label is "server" or "client".
func transcriptMAC(key []byte, label string, c Identity, nonceC []byte, s Identity, nonceS []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("beluga-handshake-v1 " + label))
	for _, f := range [][]byte{[]byte(c.Role), []byte(c.ID), nonceC, []byte(s.Role), []byte(s.ID), nonceS} {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(f)))
		m.Write(n[:])
		m.Write(f)
	}
	return m.Sum(nil)
}

// Handshake bodies: a sequence of fields, each a uint16 length and bytes.
func appendField(b, f []byte) []byte {
	b = binary.BigEndian.AppendUint16(b, uint16(len(f)))
	return append(b, f...)
}

// splitFields parses exactly n fields; anything else is an error.
func splitFields(body []byte, n int) ([][]byte, error) {
	out := make([][]byte, 0, n)
	for len(body) > 0 {
		if len(body) < 2 || len(out) == n {
			return nil, fmt.Errorf("%w: malformed handshake frame", errAuth)
		}
		l := int(binary.BigEndian.Uint16(body))
		body = body[2:]
		if l > len(body) {
			return nil, fmt.Errorf("%w: malformed handshake frame", errAuth)
		}
		out = append(out, body[:l:l])
		body = body[l:]
	}
	if len(out) != n {
		return nil, fmt.Errorf("%w: handshake frame has %d fields, want %d", errAuth, len(out), n)
	}
	return out, nil
}

func handshakeFrame(t message.Type, fields ...[]byte) []byte {
	var body []byte
	for _, f := range fields {
		body = appendField(body, f)
	}
	return frame.Append(nil, frame.Frame{Type: t, Body: body})
}

func nonce() []byte {
	b := make([]byte, nonceLen)
	_, _ = rand.Read(b) // crypto/rand.Read does not fail (it panics the process if it cannot)
	return b
}

func (a *Auth) self() Identity {
	id := ""
	if a.ID != nil {
		id = a.ID()
	}
	return Identity{Role: a.Role, ID: id}
}

// check reports a misconfigured Auth when the transport is built.
func (a *Auth) check() error {
	if len(a.Key) < 16 {
		return errors.New("remote: auth key is shorter than 16 bytes")
	}
	return validIdentity(Identity{Role: a.Role, ID: "x"})
}

// beginHandshake runs in OnOpen: a client sends its hello, a server waits
// for one. Limits.HandshakeTimeout bounds both: the server's sweeper closes
// a connection not authenticated in time (limits.go), a client gives up
// waiting (Client.dial).
func (e *events) beginHandshake(c *conn) []byte {
	hs := &handshake{server: !e.client, self: e.auth.self()}
	c.hs = hs
	if hs.server {
		hs.step = typeHello
		return nil
	}
	hs.step = typeChallenge
	hs.nonceC = nonce()
	return handshakeFrame(typeHello, []byte(hs.self.Role), []byte(hs.self.ID), hs.nonceC)
}

// handshakeTraffic consumes handshake frames from gc's inbound buffer. It
// returns done once the connection is authenticated (the rest of the buffer
// is ordinary frames), or a Close action on failure, or neither while it
// waits for more bytes.
func (e *events) handshakeTraffic(c *conn, gc gnet.Conn) (done bool, act gnet.Action) {
	for c.hs != nil {
		avail := gc.InboundBuffered()
		if avail == 0 {
			return false, gnet.None
		}
		hdr, err := gc.Peek(min(avail, frame.HeaderSize))
		if err != nil {
			return false, e.authFail(c, err)
		}
		total, err := frame.Size(hdr, maxHandshakeBody)
		if err != nil {
			return false, e.authFail(c, fmt.Errorf("%w: %w", errAuth, err))
		}
		if total == 0 || avail < total {
			return false, gnet.None
		}
		buf, err := gc.Peek(total)
		if err != nil {
			return false, e.authFail(c, err)
		}
		f, _, err := frame.Decode(buf, maxHandshakeBody)
		if err == nil {
			var out []byte
			out, err = c.hs.step1(e.auth.Key, f)
			if err == nil && out != nil {
				_, err = gc.Write(out)
			}
		}
		if _, derr := gc.Discard(total); derr != nil && err == nil {
			err = derr
		}
		if err != nil {
			return false, e.authFail(c, err)
		}
		if c.hs.step == 0 { // authenticated
			c.peer, c.hs = c.hs.peer, nil
			c.authed.Store(true)
			if c.authDone != nil {
				close(c.authDone)
			}
			e.log.Debug("peer authenticated", zap.String("remote", c.remote), zap.Stringer("peer", c.peer))
		}
	}
	return true, gnet.None
}

// takePeer reads the peer's identity and nonce from the first three fields
// of a hello or challenge and returns a copy of the nonce.
func (hs *handshake) takePeer(fs [][]byte) ([]byte, error) {
	hs.peer = Identity{Role: string(fs[0]), ID: string(fs[1])}
	if err := validIdentity(hs.peer); err != nil {
		return nil, err
	}
	if len(fs[2]) != nonceLen {
		return nil, fmt.Errorf("%w: nonce of %d bytes", errAuth, len(fs[2]))
	}
	return append([]byte(nil), fs[2]...), nil
}

// step1 takes one handshake frame and returns what to answer (nil: nothing).
// It sets hs.step to 0 once the peer is authenticated. A pure function of
// its inputs and the nonces it draws, so the fuzz target can drive it.
func (hs *handshake) step1(key []byte, f frame.Frame) ([]byte, error) {
	if f.Type != hs.step {
		if f.Type < typeHello || f.Type > typeOK {
			return nil, fmt.Errorf("%w: frame type %d before authentication", errAuth, f.Type)
		}
		return nil, fmt.Errorf("%w: handshake frame %#x out of order (want %#x)", errAuth, f.Type, hs.step)
	}
	switch f.Type {
	case typeHello: // server
		fs, err := splitFields(f.Body, 3)
		if err != nil {
			return nil, err
		}
		n, err := hs.takePeer(fs)
		if err != nil {
			return nil, err
		}
		hs.nonceC = n
		hs.nonceS = nonce()
		mac := transcriptMAC(key, "server", hs.peer, hs.nonceC, hs.self, hs.nonceS)
		hs.step = typeProof
		return handshakeFrame(typeChallenge, []byte(hs.self.Role), []byte(hs.self.ID), hs.nonceS, mac), nil
	case typeChallenge: // client
		fs, err := splitFields(f.Body, 4)
		if err != nil {
			return nil, err
		}
		n, err := hs.takePeer(fs)
		if err != nil {
			return nil, err
		}
		hs.nonceS = n
		want := transcriptMAC(key, "server", hs.self, hs.nonceC, hs.peer, hs.nonceS)
		if !hmac.Equal(want, fs[3]) {
			return nil, fmt.Errorf("%w: the server's proof does not match (another cluster secret?)", errAuth)
		}
		hs.step = typeOK
		return handshakeFrame(typeProof, transcriptMAC(key, "client", hs.self, hs.nonceC, hs.peer, hs.nonceS)), nil
	case typeProof: // server
		fs, err := splitFields(f.Body, 1)
		if err != nil {
			return nil, err
		}
		want := transcriptMAC(key, "client", hs.peer, hs.nonceC, hs.self, hs.nonceS)
		if !hmac.Equal(want, fs[0]) {
			return nil, fmt.Errorf("%w: the client's proof does not match (another cluster secret?)", errAuth)
		}
		hs.step = 0
		return handshakeFrame(typeOK), nil
	case typeOK: // client
		if len(f.Body) != 0 {
			return nil, fmt.Errorf("%w: malformed handshake frame", errAuth)
		}
		hs.step = 0
		return nil, nil
	}
	return nil, fmt.Errorf("%w: unexpected handshake state", errAuth)
}

// authFail closes a connection that did not authenticate, with one log line
// (rate-limited across connections: a flood of attempts cannot flood the log).
func (e *events) authFail(c *conn, err error) gnet.Action {
	if c.hs != nil {
		if c.hs.logged {
			return gnet.Close
		}
		c.hs.logged = true
	}
	if n, ok := e.authLog.allow(time.Now()); ok {
		fields := []zap.Field{zap.String("remote", c.remote), zap.Error(err)}
		if c.hs != nil && c.hs.peer.Role != "" {
			fields = append(fields, zap.String("claimed", c.hs.peer.String()))
		}
		if n > 0 {
			fields = append(fields, zap.Int("suppressed_since_last", n))
		}
		e.log.Warn("closing unauthenticated connection", fields...)
	}
	return gnet.Close
}

// handshakeClosed runs in OnClose: a connection that ends before it
// authenticated (the peer left on seeing our proof fail, or it timed out)
// is logged like a refused one, once.
func (e *events) handshakeClosed(c *conn, err error) {
	if c.hs == nil || c.hs.logged {
		return
	}
	switch {
	case c.hsExpired.Load():
		err = errors.New("not authenticated within the handshake timeout")
	case err == nil:
		err = errors.New("closed")
	}
	e.authFail(c, fmt.Errorf("%w: connection ended before the handshake completed: %w", errAuth, err))
}

// Failed handshakes log a burst of lines, then authLogRate a second.
const (
	authLogBurst = 20
	authLogRate  = 1
)

// awaitAuth waits until a dialled connection is authenticated (no-op
// without auth); on failure the connection is closed.
func awaitAuth(ctx context.Context, c *conn) error {
	if c.authDone == nil {
		return nil
	}
	select {
	case <-c.authDone:
		return nil
	case <-c.done:
		return fmt.Errorf("handshake: %w (refused by the peer: another cluster secret, or no authentication there?)", ErrClosed)
	case <-ctx.Done():
		c.close()
		return fmt.Errorf("handshake: %w", ctx.Err())
	}
}
