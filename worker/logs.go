package worker

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/beluga-scheduler/beluga/common/logspan"
)

// MaxLogChunk caps one LogResponse: a larger log is read in several requests.
// It bounds what one request holds (the window, then its encoding in the
// frame: about three times the window in all).
const MaxLogChunk = 1 << 20

var errBadRange = errors.New("bad log range")

// readLog reads up to limit bytes (0 or more than MaxLogChunk: MaxLogChunk)
// of path, a file under dir, from offset. eof says the read reached the
// current end of the file; a running task's log may grow after it. No
// symlink is followed out of dir, and none at all as the last component:
// a task can plant links in the log dir, or replace its own log by one.
func readLog(dir, path string, offset, limit int64) (data []byte, eof bool, err error) {
	if offset < 0 || limit < 0 {
		return nil, false, fmt.Errorf("%w: offset %d, limit %d: want >= 0", errBadRange, offset, limit)
	}
	if limit == 0 || limit > MaxLogChunk {
		limit = MaxLogChunk
	}
	f, err := openInside(dir, path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	if !fi.Mode().IsRegular() {
		return nil, false, fmt.Errorf("%w: log %s is not a regular file", errNotLog, path)
	}
	size := fi.Size()
	if offset >= size {
		return []byte{}, true, nil
	}
	buf := make([]byte, min(limit, size-offset))
	n, err := f.ReadAt(buf, offset)
	if err != nil && !errors.Is(err, io.EOF) { // EOF: the file shrank meanwhile
		return nil, false, err
	}
	return buf[:n], offset+int64(n) >= size, nil
}

// MaxLogSpans caps the stderr spans of one LogResponse (with the window's
// bytes, within the frame limit): a window holding more ends where the
// first left off starts.
const MaxLogSpans = 1 << 16

// readSpans returns the stderr spans of the log at path within [from, to)
// and the end of the window they cover (to, or less past MaxLogSpans). A
// log without a span file had no stderr, or was written before the worker
// recorded streams: no spans.
func readSpans(dir, path string, from, to int64) ([]logspan.Span, int64, error) {
	if from >= to {
		return nil, to, nil
	}
	f, err := openInside(dir, logspan.Path(path))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, to, nil
	}
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	spans, next, more, err := logspan.Read(f, from, to, MaxLogSpans)
	if err != nil {
		return nil, 0, fmt.Errorf("stderr spans of %s: %w", path, err)
	}
	if more {
		to = next
	}
	return spans, to, nil
}

// insideDir checks that path names a file under dir, so a LogRequest cannot
// read arbitrary files of the worker host.
func insideDir(dir, path string) error {
	clean := filepath.Clean(path)
	if !filepath.IsAbs(clean) {
		return fmt.Errorf("%w: log path %q is not absolute", errNotLog, path)
	}
	rel, err := filepath.Rel(dir, clean)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("%w: log path %q is outside this worker's log directory", errNotLog, path)
	}
	return nil
}

// openInside opens path for reading through an os.Root of dir, so that no
// component resolves outside dir, with O_NOFOLLOW on the file itself.
func openInside(dir, path string) (*os.File, error) {
	if err := insideDir(dir, path); err != nil {
		return nil, err
	}
	rel, err := filepath.Rel(dir, filepath.Clean(path))
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
	if errors.Is(err, syscall.ELOOP) {
		return nil, fmt.Errorf("%w: log %s is a symbolic link", errNotLog, path)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: log %s: %v", errNotLog, path, err)
	}
	return f, err
}

// errNotLog marks a log path that is refused: a link, or outside the log dir.
var errNotLog = errors.New("not a task log")

// ownLog checks that path, given with a request for task id, names that
// task's log file (<dir>/<workflow instance>/<id>.log).
func ownLog(id int64, path string) error {
	if id != 0 && filepath.Base(path) != strconv.FormatInt(id, 10)+".log" {
		return fmt.Errorf("%w: log path %q is not the log of task instance %d", errNotLog, path, id)
	}
	return nil
}
