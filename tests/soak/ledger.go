// Package soak runs the whole cluster (two masters, two workers, a private
// ZooKeeper and MariaDB, every master and worker link through a proxy of its
// own) under a mixed workload and seeded random faults, then drains it and
// checks invariants against a ledger the tasks write outside Beluga and
// against the database. `make soak MINUTES=n SEED=s` runs it (soak_test.go);
// docs/reliability.md says what it injects and checks.
package soak

import (
	"bufio"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// LedgerFile is the ledger's name in the soak's directory.
const LedgerFile = "ledger"

// Entry is one line of the ledger: a task started, or ended with RC.
type Entry struct {
	End          bool // false: the start line
	Instance     int64
	TaskInstance int64
	Task         string
	Attempt      int
	At           time.Time
	RC           int // end lines only
}

// Wrap returns cmd preceded by a start line and followed by an end line
// (with cmd's exit status) appended to ledger, and exiting with that
// status. Each line is one short write to a file opened for appending, so
// lines of concurrent tasks do not interleave.
func Wrap(ledger, cmd string) string {
	q := "'" + strings.ReplaceAll(ledger, "'", `'\''`) + "'"
	ids := `$BELUGA_WORKFLOW_INSTANCE_ID $BELUGA_TASK_INSTANCE_ID $BELUGA_TASK_NAME $BELUGA_ATTEMPT`
	return fmt.Sprintf(`echo "start %s $(date +%%s.%%N)" >> %s
( %s ); rc=$?
echo "end %s $(date +%%s.%%N) $rc" >> %s
exit $rc`, ids, q, cmd, ids, q)
}

// LedgerPath is the ledger in dir.
func LedgerPath(dir string) string { return filepath.Join(dir, LedgerFile) }

// ParseLedger reads every line of a ledger.
func ParseLedger(r io.Reader) ([]Entry, error) {
	var out []Entry
	sc := bufio.NewScanner(r)
	for n := 1; sc.Scan(); n++ {
		e, err := parseEntry(sc.Text())
		if err != nil {
			return nil, fmt.Errorf("ledger line %d %q: %w", n, sc.Text(), err)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

func parseEntry(line string) (Entry, error) {
	fs := strings.Fields(line)
	var e Entry
	switch {
	case len(fs) == 6 && fs[0] == "start":
	case len(fs) == 7 && fs[0] == "end":
		e.End = true
	default:
		return e, fmt.Errorf("want start (6 fields) or end (7 fields)")
	}
	var err error
	if e.Instance, err = strconv.ParseInt(fs[1], 10, 64); err != nil {
		return e, fmt.Errorf("instance id: %w", err)
	}
	if e.TaskInstance, err = strconv.ParseInt(fs[2], 10, 64); err != nil {
		return e, fmt.Errorf("task instance id: %w", err)
	}
	e.Task = fs[3]
	if e.Attempt, err = strconv.Atoi(fs[4]); err != nil {
		return e, fmt.Errorf("attempt: %w", err)
	}
	if e.At, err = parseUnix(fs[5]); err != nil {
		return e, fmt.Errorf("time: %w", err)
	}
	if e.End {
		if e.RC, err = strconv.Atoi(fs[6]); err != nil {
			return e, fmt.Errorf("exit status: %w", err)
		}
	}
	return e, nil
}

// parseUnix reads date +%s.%N exactly (a float64 would lose the
// nanoseconds).
func parseUnix(s string) (time.Time, error) {
	secs, frac, _ := strings.Cut(s, ".")
	sec, err := strconv.ParseInt(secs, 10, 64)
	if err != nil {
		return time.Time{}, err
	}
	var ns int64
	if frac != "" {
		if len(frac) > 9 {
			frac = frac[:9]
		}
		if ns, err = strconv.ParseInt(frac+strings.Repeat("0", 9-len(frac)), 10, 64); err != nil {
			return time.Time{}, err
		}
	}
	return time.Unix(sec, ns), nil
}
