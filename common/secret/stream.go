package secret

import (
	"bytes"
	"io"
	"slices"
)

// minMasked is the shortest value a Masker replaces: masking "1" or "a"
// would garble a log without hiding anything worth hiding.
const minMasked = 3

// Masker reads from R and replaces every occurrence of one of the values
// with Mask. A value may be split across reads (the task wrote it in two
// pieces, or a pipe buffer ended in it), so the bytes at the end of what was
// read that could begin a value are held back until the next read tells;
// they are passed on at EOF or on an error.
type Masker struct {
	r      io.Reader
	values [][]byte // longest first, so a value that contains another wins
	maxLen int
	first  [256]bool // first bytes of values: where a match can start
	chunk  []byte
	buf    []byte // read, not yet passed on
	out    []byte // masked, ready to pass on
	err    error
}

// NewMasker masks values (those shorter than 3 bytes are left alone) in what
// r yields. With nothing to mask it returns r itself.
func NewMasker(r io.Reader, values []string) io.Reader {
	m := newMasker(r, values)
	if len(m.values) == 0 {
		return r
	}
	return m
}

// NewFilter returns a Masker that bytes are pushed through (Feed, End)
// rather than read through: for a caller that reads its source itself.
func NewFilter(values []string) *Masker { return newMasker(nil, values) }

// Feed masks p and returns what can be passed on now; a tail that may
// begin a value is held until the next Feed or End. With nothing to mask
// it returns p itself.
func (m *Masker) Feed(p []byte) []byte {
	if len(m.values) == 0 {
		return p
	}
	m.buf = append(m.buf, p...)
	return m.mask(m.buf, false)
}

// End returns the bytes held back, masked: nothing more can complete a value.
func (m *Masker) End() []byte {
	if len(m.buf) == 0 {
		return nil
	}
	out := m.mask(m.buf, true)
	m.buf = nil
	return out
}

func newMasker(r io.Reader, values []string) *Masker {
	m := &Masker{r: r}
	for _, v := range values {
		if len(v) >= minMasked && !slices.ContainsFunc(m.values, func(b []byte) bool { return string(b) == v }) {
			m.values = append(m.values, []byte(v))
			m.maxLen = max(m.maxLen, len(v))
			m.first[v[0]] = true
		}
	}
	slices.SortFunc(m.values, func(a, b []byte) int { return len(b) - len(a) })
	return m
}

// Read implements io.Reader.
func (m *Masker) Read(p []byte) (int, error) {
	for len(m.out) == 0 {
		if m.err != nil {
			if len(m.buf) > 0 { // the end: nothing more can complete a value
				m.out, m.buf = m.mask(m.buf, true), nil
				break
			}
			return 0, m.err
		}
		if m.chunk == nil {
			m.chunk = make([]byte, 32<<10)
		}
		n, err := m.r.Read(m.chunk)
		m.buf = append(m.buf, m.chunk[:n]...)
		m.err = err
		if m.err == nil {
			m.out = m.mask(m.buf, false)
		}
	}
	n := copy(p, m.out)
	m.out = m.out[n:]
	return n, nil
}

// mask replaces the values in m.buf and returns what can be passed on;
// unless final, a tail that may begin a value stays in m.buf.
func (m *Masker) mask(b []byte, final bool) []byte {
	out := make([]byte, 0, len(b))
	i, plain := 0, 0 // b[plain:i] is passed on as it is
	for i < len(b) {
		if !m.first[b[i]] {
			i++
			continue
		}
		// Wait first: what may grow into a longer value is not yet a
		// match of a shorter one.
		if !final && m.mayBegin(b[i:]) {
			break
		}
		if v := m.matchAt(b[i:]); v > 0 {
			out = append(append(out, b[plain:i]...), Mask...)
			i += v
			plain = i
			continue
		}
		i++
	}
	out = append(out, b[plain:i]...)
	m.buf = append(m.buf[:0], b[i:]...)
	return out
}

// matchAt is the length of the value b starts with, or 0.
func (m *Masker) matchAt(b []byte) int {
	for _, v := range m.values {
		if bytes.HasPrefix(b, v) {
			return len(v)
		}
	}
	return 0
}

// mayBegin reports whether b, shorter than some value, is its start: the
// next read may complete it.
func (m *Masker) mayBegin(b []byte) bool {
	if len(b) >= m.maxLen {
		return false
	}
	for _, v := range m.values {
		if len(b) < len(v) && bytes.HasPrefix(v, b) {
			return true
		}
	}
	return false
}
