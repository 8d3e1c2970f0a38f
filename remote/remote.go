// Package remote is the Beluga TCP transport on gnet v2: a Server that accepts
// peers, a Client that dials them, request/reply correlation by request id,
// and pushes in both directions. Handlers receive decoded message.Message
// values; they never see bytes.
//
// Threading: gnet event loops only decode frames and queue the messages; each
// connection has one goroutine that runs the Handler for its messages in
// arrival order. Writes from any goroutine are queued per connection and
// flushed by the event loop, frames queued together in one write.
package remote

import (
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/remote/frame"
	"github.com/beluga-scheduler/beluga/remote/message"
)

// Peer is the other end of one connection; Send may be called from any goroutine.
type Peer interface {
	// Send writes m as a reply (reqID of the request) or a push (reqID 0). It
	// returns once the frame is queued for the socket (not once it is written,
	// nor once the peer read it), or an error when the connection is closed.
	Send(reqID uint64, m message.Message) error
	RemoteAddr() string
}

// Handler is called for each decoded inbound message. It runs off the gnet
// event loop, serially per connection, so it must not block for long: a slow
// handler delays the next messages of the same connection, and Stop waits for
// a running handler to return.
type Handler func(p Peer, reqID uint64, m message.Message)

// Options tune a Server or Client. Zero values pick defaults.
type Options struct {
	MaxBody     int           // largest frame body sent or accepted; 0 = frame.DefaultMaxBody; see frame.Limit
	DialTimeout time.Duration // Client: TCP connect timeout; 0 = 3s
	// RequestTimeout bounds Client.Request when its ctx has no deadline; 0 = 30s.
	RequestTimeout time.Duration
	Log            *zap.Logger // nil = no logging

	// Limits: what one peer may hold on a Server (limits.go); a Client
	// takes only HandshakeTimeout, for its side of each handshake.
	Limits Limits
	// Auth, when set, makes every connection authenticate (auth.go) before
	// any other frame is read. nil leaves the transport open: for tests of
	// the transport and of single packages only; the beluga binaries
	// always set it.
	Auth *Auth
	// TLS, when set, runs every connection over mutual TLS (tls.go); a
	// peer without it is refused. nil: plain TCP.
	TLS *TLS
	// Routes, for a Client, dials an address at another one (addr ->
	// reach): a NAT between, or a proxy per link in the soak. The
	// connection is still the address asked for's (its cache entry, TLS
	// name, logs).
	Routes map[string]string
}

func (o Options) withDefaults() Options {
	if o.MaxBody <= 0 {
		o.MaxBody = frame.DefaultMaxBody
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 3 * time.Second
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = 30 * time.Second
	}
	if o.Log == nil {
		o.Log = zap.NewNop()
	}
	return o
}

// Errors returned by the transport; test with errors.Is.
var (
	// ErrClosed: the connection closed before the message was written or answered.
	ErrClosed = errors.New("remote: connection closed")
	// ErrStopped: the Server or Client is stopped (or was never started).
	ErrStopped = errors.New("remote: stopped")
)

// RemoteError is a message.Error reply to Client.Request.
type RemoteError struct {
	Addr    string // the peer that answered
	Code    string
	Message string
}

func (e *RemoteError) Error() string {
	return fmt.Sprintf("remote %s: %s: %s", e.Addr, e.Code, e.Message)
}

// encodeFrame returns the wire bytes of m. The size check here spares a
// round trip to a peer that would close the connection on it.
func encodeFrame(reqID uint64, m message.Message, maxBody int) ([]byte, error) {
	if m == nil {
		return nil, errors.New("remote: nil message")
	}
	body, err := message.Encode(m)
	if err != nil {
		return nil, err
	}
	if limit := frame.Limit(m.Type(), maxBody); len(body) > limit {
		return nil, fmt.Errorf("encode %T: %d bytes, limit %d: %w", m, len(body), limit, frame.ErrTooLarge)
	}
	buf := make([]byte, 0, frame.HeaderSize+len(body))
	return frame.Append(buf, frame.Frame{Type: m.Type(), RequestID: reqID, Body: body}), nil
}

// Lifecycle states of Server and Client.
const (
	stateNew = iota
	stateStarted
	stateStopped
)
