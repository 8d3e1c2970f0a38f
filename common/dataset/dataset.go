// Package dataset holds the pure rules of data-aware scheduling (README,
// "Data-aware scheduling"): dataset names, partition grains and keys, what
// a task's produces entry and a workflow's on_datasets entry say, and when
// a consumer's partition is ready. It reads and writes nothing.
package dataset

import (
	"fmt"
	"strings"
	"time"
)

// Grain is how a dataset is partitioned.
type Grain string

// The partition grains.
const (
	Hourly Grain = "hourly"
	Daily  Grain = "daily"
)

// Late-data policies of a consumer: what a partition produced again after
// the consumer ran for it does.
const (
	LateIgnore = "ignore" // recorded in the ledger, no run
	LateRerun  = "rerun"  // a new run for the partition
)

// Partition key layouts: 2026-12-07 (daily) and 2026-12-07T13 (hourly).
const (
	dayLayout  = "2006-01-02"
	hourLayout = "2006-01-02T15"
)

const maxName = 200

// NameRule says what a dataset name may be.
const NameRule = "a dataset name is 1 to 200 ASCII letters, digits, '_', '-' or '.', starting with a letter"

// ValidName reports whether s is a dataset name (warehouse.orders).
func ValidName(s string) bool {
	if s == "" || len(s) > maxName || !isLetter(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(isLetter(c) || '0' <= c && c <= '9' || c == '_' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// ParseGrain reads hourly or daily.
func ParseGrain(s string) (Grain, error) {
	switch g := Grain(s); g {
	case Hourly, Daily:
		return g, nil
	}
	return "", fmt.Errorf("partition grain %q: use hourly or daily", s)
}

// Input is one entry of a workflow's on_datasets: a dataset and the grain
// of its partitions.
type Input struct {
	Dataset string `json:"dataset"`
	Grain   Grain  `json:"grain"`
}

func (in Input) String() string { return in.Dataset + "@" + string(in.Grain) }

// ParseInput reads an on_datasets entry, "orders@daily".
func ParseInput(s string) (Input, error) {
	name, g, ok := strings.Cut(s, "@")
	if !ok {
		return Input{}, fmt.Errorf("on_datasets entry %q: write dataset@grain, e.g. orders@daily", s)
	}
	if !ValidName(name) {
		return Input{}, fmt.Errorf("on_datasets entry %q: %s", s, NameRule)
	}
	gr, err := ParseGrain(g)
	if err != nil {
		return Input{}, fmt.Errorf("on_datasets entry %q: %w", s, err)
	}
	return Input{Dataset: name, Grain: gr}, nil
}

// RunGrain is the grain of a consumer's runs: the one it names (want,
// "" for none), else the coarsest of its inputs' (a daily run of hourly
// and daily inputs waits for the day's 24 hours).
func RunGrain(ins []Input, want Grain) Grain {
	if want != "" {
		return want
	}
	for _, in := range ins {
		if in.Grain == Daily {
			return Daily
		}
	}
	return Hourly
}

// Ref is one produced partition, "warehouse.orders@2026-12-07".
type Ref struct {
	Dataset   string `json:"dataset"`
	Partition string `json:"partition"`
}

func (r Ref) String() string { return r.Dataset + "@" + r.Partition }

// ParseRef reads dataset@partition, the partition in any layout
// NormalizePartition takes.
func ParseRef(s string) (Ref, error) {
	name, p, ok := strings.Cut(strings.TrimSpace(s), "@")
	if !ok {
		return Ref{}, fmt.Errorf("dataset partition %q: write dataset@partition, e.g. orders@2026-12-07", s)
	}
	if !ValidName(name) {
		return Ref{}, fmt.Errorf("dataset partition %q: %s", s, NameRule)
	}
	key, _, err := NormalizePartition(p)
	if err != nil {
		return Ref{}, fmt.Errorf("dataset partition %q: %w", s, err)
	}
	return Ref{Dataset: name, Partition: key}, nil
}

// ParseRefs reads a comma-separated list of dataset@partition (a task's
// "produces" output).
func ParseRefs(s string) ([]Ref, error) {
	var out []Ref
	for _, part := range strings.Split(s, ",") {
		if strings.TrimSpace(part) == "" {
			continue
		}
		r, err := ParseRef(part)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// CheckProduces checks a task's produces entry before its params are
// known: dataset@partition, the partition possibly a ${param}.
func CheckProduces(s string) error {
	name, p, ok := strings.Cut(s, "@")
	if !ok || p == "" {
		return fmt.Errorf("produces entry %q: write dataset@partition, e.g. warehouse.orders@${bizdate}", s)
	}
	if !ValidName(name) {
		return fmt.Errorf("produces entry %q: %s", s, NameRule)
	}
	if !strings.Contains(p, "${") {
		if _, _, err := NormalizePartition(p); err != nil {
			return fmt.Errorf("produces entry %q: %w", s, err)
		}
	}
	return nil
}

// NormalizePartition reads a partition key written 2026-12-07, 20261207,
// 2026-12-07T13 or 2026121713 and returns it in the stored layout with
// its grain.
func NormalizePartition(p string) (string, Grain, error) {
	for _, f := range []struct {
		layout string
		grain  Grain
	}{{dayLayout, Daily}, {"20060102", Daily}, {hourLayout, Hourly}, {"2006010215", Hourly}} {
		if len(p) != len(f.layout) {
			continue
		}
		if t, err := time.Parse(f.layout, p); err == nil {
			return Key(t, f.grain), f.grain, nil
		}
	}
	return "", "", fmt.Errorf("partition %q: use a day (2026-12-07 or 20261207) or an hour (2026-12-07T13 or 2026120713)", p)
}

// Key is the partition key of t at grain g.
func Key(t time.Time, g Grain) string {
	if g == Hourly {
		return t.Format(hourLayout)
	}
	return t.Format(dayLayout)
}

// GrainOf is the grain of a stored partition key.
func GrainOf(key string) Grain {
	if len(key) == len(hourLayout) {
		return Hourly
	}
	return Daily
}

// RunPartition is the partition of a consumer's run (grain g) that a
// produced partition key counts towards, or false when it counts towards
// none (an hourly run's input produced daily).
func RunPartition(key string, g Grain) (string, bool) {
	kg := GrainOf(key)
	switch {
	case kg == g:
		return key, true
	case kg == Hourly && g == Daily:
		return key[:len(dayLayout)], true
	}
	return "", false
}

// Needed is the partitions of input in that a run partition needs: the
// partition itself at the same grain, the day's 24 hours for an hourly
// input of a daily run.
func Needed(in Input, runKey string) []string {
	if in.Grain == GrainOf(runKey) {
		return []string{runKey}
	}
	out := make([]string, 24)
	for h := range out {
		out[h] = fmt.Sprintf("%sT%02d", runKey, h)
	}
	return out
}

// RunParams are the params a dataset-triggered run gets for its
// partition: partition (the key) and bizdate (yyyyMMdd of its day), and
// for an hourly run bizhour (HH).
func RunParams(runKey string) map[string]string {
	day := strings.ReplaceAll(runKey[:len(dayLayout)], "-", "")
	ps := map[string]string{"partition": runKey, "bizdate": day}
	if GrainOf(runKey) == Hourly {
		ps["bizhour"] = runKey[len(dayLayout)+1:]
	}
	return ps
}
