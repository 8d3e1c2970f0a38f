package frame

import (
	"bytes"
	"errors"
	"testing"

	"github.com/beluga-scheduler/beluga/remote/message"
)

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	cases := []Frame{
		{Type: message.TypePing, RequestID: 0, Body: nil},
		{Type: message.TypeDispatch, RequestID: 1, Body: []byte(`{"task_instance_id":7}`)},
		{Type: message.TypeError, RequestID: ^uint64(0), Body: bytes.Repeat([]byte{0xff}, 70000)},
		{Type: 255, RequestID: 42, Body: []byte{0}},
	}
	for _, want := range cases {
		buf := Append([]byte("prefix"), want)[len("prefix"):]
		if len(buf) != HeaderSize+len(want.Body) {
			t.Fatalf("encoded %d bytes, want %d", len(buf), HeaderSize+len(want.Body))
		}
		// Every strict prefix asks for more bytes and is never an error.
		for i := 0; i < len(buf); i += 1 + i/7 {
			f, n, err := Decode(buf[:i], 0)
			if err != nil || n != 0 || f.Body != nil {
				t.Fatalf("prefix %d: got n=%d err=%v, want need-more", i, n, err)
			}
		}
		// Trailing bytes of the next frame are left alone.
		got, n, err := Decode(append(buf, 0xBE, 0x1A, 1), 0)
		if err != nil || n != len(buf) {
			t.Fatalf("decode: n=%d err=%v, want n=%d", n, err, len(buf))
		}
		if got.Type != want.Type || got.RequestID != want.RequestID || !bytes.Equal(got.Body, want.Body) {
			t.Fatalf("decode: got %+v, want %+v", got, want)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	t.Parallel()
	good := Append(nil, Frame{Type: message.TypeAck, RequestID: 9, Body: []byte("0123456789")})
	with := func(i int, b byte) []byte {
		c := bytes.Clone(good)
		c[i] = b
		return c
	}
	cases := []struct {
		name    string
		buf     []byte
		maxBody int
		want    error
	}{
		{"bad first byte alone", []byte{'G'}, 0, ErrBadMagic},
		{"http request", []byte("GET / HTTP/1.1\r\n\r\n"), 0, ErrBadMagic},
		{"bad magic low byte", with(1, 0x1B), 0, ErrBadMagic},
		{"version 0", with(2, 0), 0, ErrBadVersion},
		{"version 2 short header", with(2, 2)[:3], 0, ErrBadVersion},
		{"over limit", good, 9, ErrTooLarge},
		{"huge length", with(12, 0xff), 0, ErrTooLarge},
		{"over default limit", Append(nil, Frame{Body: make([]byte, DefaultMaxBody+1)})[:HeaderSize], 0, ErrTooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, n, err := Decode(tc.buf, tc.maxBody)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if n != 0 || f.Body != nil {
				t.Fatalf("error with n=%d body=%q", n, f.Body)
			}
		})
	}
	// Exactly at the limit is fine.
	if _, n, err := Decode(good, 10); err != nil || n != len(good) {
		t.Fatalf("at limit: n=%d err=%v", n, err)
	}
}

func TestSize(t *testing.T) {
	t.Parallel()
	buf := Append(nil, Frame{Type: message.TypeKill, Body: []byte("abc")})
	if n, err := Size(buf[:HeaderSize-1], 0); n != 0 || err != nil {
		t.Fatalf("short header: n=%d err=%v", n, err)
	}
	if n, err := Size(buf[:HeaderSize], 0); n != HeaderSize+3 || err != nil {
		t.Fatalf("header only: n=%d err=%v", n, err)
	}
}

func TestBodyAliasesBuffer(t *testing.T) {
	t.Parallel()
	buf := Append(nil, Frame{Type: message.TypeLogResponse, Body: []byte("abc")})
	f, _, err := Decode(buf, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Appending to the body must not overwrite bytes after the frame.
	_ = append(f.Body, 'x')
	if cap(f.Body) != len(f.Body) {
		t.Fatalf("body capacity %d leaks into the buffer", cap(f.Body))
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte{})
	f.Add(Append(nil, Frame{Type: message.TypePing}))
	f.Add(Append(nil, Frame{Type: message.TypeResult, RequestID: 3, Body: []byte(`{"state":"succeeded"}`)}))
	two := Append(Append(nil, Frame{Type: message.TypeAck, Body: []byte("{}")}), Frame{Type: message.TypeDBAck, RequestID: 1})
	f.Add(two)
	f.Add(two[:HeaderSize+1])
	f.Add([]byte{0xBE, 0x1A, 2, 1})
	f.Add([]byte{0xBE, 0x1B})
	f.Add([]byte{0xBE, 0x1A, 1, 5, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte("GET / HTTP/1.1\r\n"))
	f.Fuzz(func(t *testing.T, buf []byte) {
		const limit = 1 << 10
		fr, n, err := Decode(buf, limit)
		if n < 0 || n > len(buf) {
			t.Fatalf("n=%d out of range 0..%d", n, len(buf))
		}
		if err != nil || n == 0 {
			if n != 0 {
				t.Fatalf("error %v with n=%d", err, n)
			}
			return
		}
		if len(fr.Body) > limit {
			t.Fatalf("body of %d bytes over limit", len(fr.Body))
		}
		if re := Append(nil, fr); !bytes.Equal(re, buf[:n]) {
			t.Fatalf("re-encoded %x, want %x", re, buf[:n])
		}
	})
}

// TestPerTypeLimit: each type is held to its own limit, under the overall one.
func TestPerTypeLimit(t *testing.T) {
	t.Parallel()
	header := func(typ message.Type, size int) []byte {
		b := Append(nil, Frame{Type: typ})
		b[12], b[13], b[14], b[15] = byte(size>>24), byte(size>>16), byte(size>>8), byte(size)
		return b
	}
	cases := []struct {
		typ     message.Type
		size    int
		maxBody int
		ok      bool
	}{
		{message.TypePing, MaxControlBody, 0, true},
		{message.TypePing, MaxControlBody + 1, 0, false},
		{message.TypeResult, MaxControlBody + 1, 0, false},
		{message.TypeDispatch, MaxDispatchBody, 0, true},
		{message.TypeDispatch, MaxDispatchBody + 1, 0, false},
		{message.TypeDispatch, 16 << 20, 0, false},
		{message.TypeDispatch, 2000, 1000, false}, // the overall limit still holds
		{message.TypeLogResponse, MaxLogBody, 0, true},
		{message.TypeLogResponse, MaxLogBody + 1, 0, false},
		{message.TypeLogRequest, MaxLogBody, 0, false},
		{message.TypeQuery, MaxQueryBody, 0, true},
		{message.TypeQueryReply, MaxQueryBody + 1, 0, false},
		{200, MaxControlBody + 1, 0, false},
	}
	for _, tc := range cases {
		n, err := Size(header(tc.typ, tc.size), tc.maxBody)
		if tc.ok && (err != nil || n != HeaderSize+tc.size) {
			t.Errorf("type %d, %d bytes, limit %d: n=%d err=%v, want accepted", tc.typ, tc.size, tc.maxBody, n, err)
		}
		if !tc.ok && !errors.Is(err, ErrTooLarge) {
			t.Errorf("type %d, %d bytes, limit %d: err=%v, want ErrTooLarge", tc.typ, tc.size, tc.maxBody, err)
		}
	}
}
