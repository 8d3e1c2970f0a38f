package worker

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// MaxLogChunk caps one LogResponse: a larger log is read in several requests.
const MaxLogChunk = 8 << 20

var errBadRange = errors.New("bad log range")

// readLog reads up to limit bytes (0 or more than MaxLogChunk: MaxLogChunk)
// of path from offset. eof says the read reached the current end of the file;
// a running task's log may grow after it.
func readLog(path string, offset, limit int64) (data []byte, eof bool, err error) {
	if offset < 0 || limit < 0 {
		return nil, false, fmt.Errorf("%w: offset %d, limit %d: want >= 0", errBadRange, offset, limit)
	}
	if limit == 0 || limit > MaxLogChunk {
		limit = MaxLogChunk
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, false, err
	}
	if !fi.Mode().IsRegular() {
		return nil, false, fmt.Errorf("log %s is not a regular file", path)
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

// insideDir checks that path names a file under dir, so a LogRequest cannot
// read arbitrary files of the worker host.
func insideDir(dir, path string) error {
	clean := filepath.Clean(path)
	if !filepath.IsAbs(clean) {
		return fmt.Errorf("log path %q is not absolute", path)
	}
	rel, err := filepath.Rel(dir, clean)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("log path %q is outside this worker's log directory", path)
	}
	return nil
}
