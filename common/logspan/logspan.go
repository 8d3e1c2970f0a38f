// Package logspan records which bytes of a task's log came from its stderr.
//
// The log itself stays one file holding stdout and stderr interleaved as
// they arrived (what `beluga task log` prints and users grep). Beside it,
// a task that wrote to stderr gets a sidecar ("<id>.stderr") of fixed-size
// records, each a span [offset, offset+length) of the log that is stderr.
// A task that never writes to stderr gets no sidecar, so the common task
// pays nothing in files or syscalls.
//
// Why this form: a record is 16 bytes (two little-endian uint64s), so the
// last one can be extended in place when stderr goes on writing (one span
// per run of stderr output, not per write), a torn tail (a crash mid-
// write) is recognised by the file's size, and a reader finds a window's
// spans by binary search without reading the whole file. Offsets are the
// log's own, so the log may be appended to (a retry, a duplicate after a
// restart) and the sidecar with it. A span is recorded before its bytes
// reach the log: a reader that read bytes and then spans sees them all.
package logspan

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"syscall"
)

// Suffix names a log's sidecar: <id>.log -> <id>.stderr.
const Suffix = ".stderr"

// recSize is one record: offset and length.
const recSize = 16

// MaxRecords bounds a sidecar (16 MiB): a task alternating streams byte by
// byte past it keeps its log, its later stderr is not marked.
const MaxRecords = 1 << 20

// Path is the sidecar of the log at logPath.
func Path(logPath string) string { return strings.TrimSuffix(logPath, ".log") + Suffix }

// Span is [Start, End) of the log.
type Span struct{ Start, End int64 }

// Writer appends spans to a sidecar, created at the first span. It is not
// safe for concurrent use: the log's writer holds its lock around it.
type Writer struct {
	path string
	f    *os.File
	n    int64 // records in the file
	last Span  // the last record, extended while stderr runs on
	err  error // the first failure: later spans are dropped
}

// NewWriter returns a writer of the sidecar at path; nothing is opened yet.
func NewWriter(path string) *Writer { return &Writer{path: path} }

// Add records [off, off+n) as stderr, extending the last span when it ends
// at off. An error is returned once and the sidecar is then left as it is.
func (w *Writer) Add(off, n int64) error {
	if w.err != nil || n <= 0 {
		return nil
	}
	if w.f == nil {
		if w.err = w.open(); w.err != nil {
			return w.err
		}
	}
	if w.n > 0 && w.last.End == off {
		w.last.End += n
		return w.put(w.n-1, w.last)
	}
	if w.n >= MaxRecords {
		return nil
	}
	w.last = Span{off, off + n}
	w.n++
	return w.put(w.n-1, w.last)
}

func (w *Writer) put(i int64, s Span) error {
	var b [recSize]byte
	binary.LittleEndian.PutUint64(b[:8], uint64(s.Start))
	binary.LittleEndian.PutUint64(b[8:], uint64(s.End-s.Start))
	if _, err := w.f.WriteAt(b[:], i*recSize); err != nil {
		w.err = fmt.Errorf("stderr spans %s: %w", w.path, err)
		return w.err
	}
	return nil
}

// open opens or creates the sidecar, never through a symbolic link (a task
// may plant one in the log directory), and picks up its last record.
func (w *Writer) open() error {
	f, err := os.OpenFile(w.path, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return fmt.Errorf("stderr spans: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("stderr spans: %w", err)
	}
	w.f, w.n = f, fi.Size()/recSize // a torn tail is overwritten
	if w.n > 0 {
		if w.last, err = record(f, w.n-1); err != nil {
			w.n = 0
		}
	}
	return nil
}

// Close closes the sidecar if it was opened.
func (w *Writer) Close() error {
	if w.f == nil {
		return nil
	}
	return w.f.Close()
}

func record(r io.ReaderAt, i int64) (Span, error) {
	var b [recSize]byte
	if _, err := r.ReadAt(b[:], i*recSize); err != nil {
		return Span{}, err
	}
	off, n := int64(binary.LittleEndian.Uint64(b[:8])), int64(binary.LittleEndian.Uint64(b[8:]))
	if off < 0 || n < 0 || off+n < off {
		return Span{}, errors.New("stderr spans: bad record")
	}
	return Span{off, off + n}, nil
}

// Read returns the spans of f (a sidecar) that meet [from, to), clipped to
// it, at most limit of them (0: no bound). more says spans were left off:
// the caller shortens its window to end where the next one starts (next).
func Read(f *os.File, from, to int64, limit int) (spans []Span, next int64, more bool, err error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, false, err
	}
	n := fi.Size() / recSize
	// Records are in log order and do not overlap: the first that ends
	// after from.
	var serr error
	i := int64(sort.Search(int(n), func(k int) bool {
		s, err := record(f, int64(k))
		if err != nil {
			serr = err
			return true
		}
		return s.End > from
	}))
	if serr != nil {
		return nil, 0, false, serr
	}
	const batch = 4096
	buf := make([]byte, batch*recSize)
	for i < n {
		k := min(n-i, batch)
		if _, err := f.ReadAt(buf[:k*recSize], i*recSize); err != nil {
			return nil, 0, false, err
		}
		for j := int64(0); j < k; j++ {
			b := buf[j*recSize:]
			off, l := int64(binary.LittleEndian.Uint64(b[:8])), int64(binary.LittleEndian.Uint64(b[8:16]))
			if off >= to {
				return spans, 0, false, nil
			}
			if limit > 0 && len(spans) == limit {
				return spans, off, true, nil
			}
			spans = append(spans, Span{Start: maxInt(off, from), End: min(off+l, to)})
		}
		i += k
	}
	return spans, 0, false, nil
}

func maxInt(a, b int64) int64 {
	if a > b {
		return a
	}
	return b
}

// Filter appends to dst the bytes of data (the log from offset) that are
// stderr (wantErr) or not, given the spans that meet the window.
func Filter(dst, data []byte, offset int64, spans []Span, wantErr bool) []byte {
	pos := offset
	end := offset + int64(len(data))
	for _, s := range spans {
		st, en := maxInt(s.Start, offset), min(s.End, end)
		if st >= en {
			continue
		}
		if !wantErr && st > pos {
			dst = append(dst, data[pos-offset:st-offset]...)
		}
		if wantErr {
			dst = append(dst, data[st-offset:en-offset]...)
		}
		pos = en
	}
	if !wantErr && pos < end {
		dst = append(dst, data[pos-offset:]...)
	}
	return dst
}
