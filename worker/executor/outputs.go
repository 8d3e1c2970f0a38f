package executor

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
)

// A process task exports values (README.md, "Task types and values between
// tasks") by printing `${setValue(name=value)}` (DolphinScheduler's form)
// or by appending name=value lines to the file $BELUGA_OUTPUT names.
const (
	outputEnv  = "BELUGA_OUTPUT"
	outputFile = ".beluga_output"
	// MaxOutputValue bounds one exported value.
	MaxOutputValue = 64 << 10
	maxOutputs     = 1000
	setValueOpen   = "${setValue("
)

// outputScanner reads a task's stdout as it goes to the log and collects
// its setValue lines. Lines are numbered from 1; the first bad one is kept.
type outputScanner struct {
	line     int
	buf      []byte
	overflow bool // the current line passed maxLine: only its start is kept
	vals     map[string]string
	err      error
}

const maxLine = MaxOutputValue + 512

func (s *outputScanner) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if room := maxLine - len(s.buf); room >= len(chunk) {
			s.buf = append(s.buf, chunk...)
		} else {
			s.buf = append(s.buf, chunk[:room]...)
			s.overflow = true
		}
		if i < 0 {
			break
		}
		s.endLine()
		p = p[i+1:]
	}
	return n, nil
}

// close ends a last line without a newline.
func (s *outputScanner) close() {
	if len(s.buf) > 0 {
		s.endLine()
	}
}

func (s *outputScanner) endLine() {
	s.line++
	defer func() { s.buf, s.overflow = s.buf[:0], false }()
	if s.err != nil {
		return
	}
	i := bytes.Index(s.buf, []byte(setValueOpen))
	if i < 0 {
		return // an ordinary line, however long
	}
	if s.overflow {
		s.err = fmt.Errorf("output on stdout line %d: value over %d bytes", s.line, MaxOutputValue)
		return
	}
	rest := s.buf[i+len(setValueOpen):]
	j := bytes.LastIndex(rest, []byte(")}"))
	if j < 0 {
		s.err = fmt.Errorf("output on stdout line %d: ${setValue( without its closing )}", s.line)
		return
	}
	s.err = addOutput(&s.vals, string(rest[:j]), fmt.Sprintf("stdout line %d", s.line))
}

// addOutput adds one name=value pair to vals; where names the line.
func addOutput(vals *map[string]string, kv, where string) error {
	name, value, ok := strings.Cut(kv, "=")
	name = strings.TrimSpace(name)
	switch {
	case !ok:
		return fmt.Errorf("output on %s: want name=value, got %q", where, clip(kv))
	case !isIdentifier(name):
		return fmt.Errorf("output on %s: name %q is not an identifier ([A-Za-z_][A-Za-z0-9_]*)", where, clip(name))
	case len(value) > MaxOutputValue:
		return fmt.Errorf("output on %s: value of %s is %d bytes, over the limit of %d", where, name, len(value), MaxOutputValue)
	case strings.IndexByte(value, 0) >= 0:
		return fmt.Errorf("output on %s: value of %s holds a NUL byte", where, name)
	}
	if *vals == nil {
		*vals = map[string]string{}
	}
	if _, seen := (*vals)[name]; !seen && len(*vals) >= maxOutputs {
		return fmt.Errorf("output on %s: more than %d outputs", where, maxOutputs)
	}
	(*vals)[name] = value
	return nil
}

// readOutputFile adds the name=value lines of the task's $BELUGA_OUTPUT
// file (if it wrote one) to vals; later lines win, as later prints do.
func readOutputFile(path string, vals *map[string]string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read $%s: %w", outputEnv, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 2*maxLine) // a value a little over the limit is named as such
	n := 0
	for n = 1; sc.Scan(); n++ {
		line := strings.TrimSuffix(sc.Text(), "\r")
		if strings.TrimSpace(line) == "" {
			continue
		}
		if err := addOutput(vals, line, fmt.Sprintf("$%s line %d", outputEnv, n)); err != nil {
			return err
		}
	}
	if errors.Is(sc.Err(), bufio.ErrTooLong) {
		return fmt.Errorf("output on $%s line %d: a line over %d bytes", outputEnv, n, 2*maxLine)
	}
	return sc.Err()
}

// checkOutputs applies the same rules to an in-process type's outputs.
func checkOutputs(vals map[string]string) error {
	names := make([]string, 0, len(vals))
	for k := range vals {
		names = append(names, k)
	}
	sort.Strings(names)
	var out map[string]string
	for _, k := range names {
		if err := addOutput(&out, k+"="+vals[k], "output "+k); err != nil {
			return err
		}
	}
	return nil
}

func isIdentifier(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

func clip(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// cappedLog is an in-process task's log writer, capped like a process's.
type cappedLog struct {
	f       *os.File
	limit   int64
	n       int64
	dropped bool
}

func (w *cappedLog) Write(p []byte) (int, error) {
	if w.n == 0 {
		if fi, err := w.f.Stat(); err == nil {
			w.n = fi.Size()
		}
	}
	room := w.limit - w.n
	if room <= 0 {
		if !w.dropped {
			w.dropped = true
			_, _ = w.f.WriteString(logMarker(w.limit))
		}
		return len(p), nil
	}
	k, err := w.f.Write(p[:min(int64(len(p)), room)])
	w.n += int64(k)
	if err != nil {
		return k, err
	}
	return len(p), nil
}
