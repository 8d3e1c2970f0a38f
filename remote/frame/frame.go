// Package frame encodes and decodes the length-prefixed frames of the Beluga
// wire protocol. It knows nothing about message bodies.
//
// Layout (big endian, HeaderSize bytes of header then the body):
//
//	magic uint16 (0xBE1A) | version uint8 (1) | type uint8 | request id uint64 | body length uint32 | body
package frame

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/beluga-scheduler/beluga/remote/message"
)

// Protocol constants.
const (
	Magic          uint16 = 0xBE1A
	Version        uint8  = 1
	HeaderSize            = 16
	DefaultMaxBody        = 16 << 20
)

// Per-type body limits. Only a few message types carry bulk: a log window
// (1 MiB of log, base64 in JSON), a dispatch (a command and params from a
// spec of at most 8 MiB, JSON-escaped) and the id lists of a query and of
// the log sweep's questions. Everything
// else is a small control message. A peer announcing more than its type
// allows is refused at the header, before its body is buffered.
const (
	MaxControlBody  = 1 << 20
	MaxLogBody      = 4 << 20
	MaxQueryBody    = 4 << 20
	MaxDispatchBody = 8 << 20
)

// MaxBodyFor is the largest body a frame of type t may carry.
func MaxBodyFor(t message.Type) int {
	switch t {
	case message.TypeDispatch:
		return MaxDispatchBody
	case message.TypeLogResponse:
		return MaxLogBody
	case message.TypeQuery, message.TypeQueryReply, message.TypeLogGone, message.TypeLogGoneReply, message.TypeLogSize:
		return MaxQueryBody
	default:
		return MaxControlBody
	}
}

// Limit is the body limit of a frame of type t under an overall limit
// maxBody (<= 0 means DefaultMaxBody): the smaller of the two.
func Limit(t message.Type, maxBody int) int {
	if maxBody <= 0 {
		maxBody = DefaultMaxBody
	}
	return min(maxBody, MaxBodyFor(t))
}

// Decode errors; callers test them with errors.Is. Any of them means the
// stream is out of sync and the connection should be closed.
var (
	ErrBadMagic   = errors.New("frame: bad magic")
	ErrBadVersion = errors.New("frame: unsupported version")
	ErrTooLarge   = errors.New("frame: body too large")
)

// Frame is one decoded frame.
type Frame struct {
	Type      message.Type
	RequestID uint64
	Body      []byte
}

// Append appends the encoding of f to dst and returns the extended slice.
// The caller keeps len(f.Body) within the peer's limit (DefaultMaxBody unless
// agreed otherwise); lengths of 4 GiB or more cannot be represented.
func Append(dst []byte, f Frame) []byte {
	var h [HeaderSize]byte
	binary.BigEndian.PutUint16(h[0:2], Magic)
	h[2] = Version
	h[3] = byte(f.Type)
	binary.BigEndian.PutUint64(h[4:12], f.RequestID)
	binary.BigEndian.PutUint32(h[12:16], uint32(len(f.Body)))
	dst = append(dst, h[:]...)
	return append(dst, f.Body...)
}

// Size checks the frame header at the start of buf and returns the total
// size (header plus body) of the frame it announces. n == 0 with a nil error
// means the header is not complete yet. Header errors are reported as soon as
// the bytes that show them arrive, so a peer speaking another protocol is
// rejected without waiting for more data. The body limit is Limit(type,
// maxBody).
func Size(buf []byte, maxBody int) (n int, err error) {
	switch {
	case len(buf) >= 2:
		if m := binary.BigEndian.Uint16(buf[0:2]); m != Magic {
			return 0, fmt.Errorf("%w: %#04x", ErrBadMagic, m)
		}
	case len(buf) == 1:
		if buf[0] != byte(Magic>>8) {
			return 0, fmt.Errorf("%w: first byte %#02x", ErrBadMagic, buf[0])
		}
	}
	if len(buf) >= 3 && buf[2] != Version {
		return 0, fmt.Errorf("%w: %d", ErrBadVersion, buf[2])
	}
	if len(buf) < HeaderSize {
		return 0, nil
	}
	size := binary.BigEndian.Uint32(buf[12:16])
	maxBody = Limit(message.Type(buf[3]), maxBody)
	// Compare as uint64 so a huge length cannot overflow int on 32-bit builds.
	if uint64(size) > uint64(maxBody) {
		return 0, fmt.Errorf("%w: %d bytes, limit %d", ErrTooLarge, size, maxBody)
	}
	return HeaderSize + int(size), nil
}

// Decode reads one frame from the start of buf. It returns the frame and the
// number of bytes it used. n == 0 with a nil error means buf does not yet hold
// a whole frame: read more and call again. maxBody and the errors are as
// for Size.
//
// f.Body aliases buf (it is not copied): a caller that keeps the body after
// buf is reused or discarded must copy it first.
func Decode(buf []byte, maxBody int) (f Frame, n int, err error) {
	total, err := Size(buf, maxBody)
	if err != nil || total == 0 || len(buf) < total {
		return Frame{}, 0, err
	}
	f = Frame{
		Type:      message.Type(buf[3]),
		RequestID: binary.BigEndian.Uint64(buf[4:12]),
		Body:      buf[HeaderSize:total:total],
	}
	return f, total, nil
}
