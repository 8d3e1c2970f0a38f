// Package sysload reads the host's load from /proc for worker heartbeats:
// CPU busy percentage (from two /proc/stat samples), memory used percentage
// (/proc/meminfo) and the 1-minute load average (/proc/loadavg).
package sysload

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// CPUTimes are the host-wide CPU counters of /proc/stat, in clock ticks.
type CPUTimes struct {
	Busy  uint64 // everything but idle and iowait
	Total uint64
}

// Usage is one sample of the host's load.
type Usage struct {
	CPU    float64 // percent of all CPUs busy since the previous sample
	Memory float64 // percent of memory in use (not available)
	Load   float64 // 1-minute load average
}

// ParseCPU reads the aggregate "cpu" line of /proc/stat. Guest time is
// already counted in user and nice, so only the first eight fields add up.
func ParseCPU(data []byte) (CPUTimes, error) {
	for _, line := range bytes.Split(data, []byte{'\n'}) {
		f := strings.Fields(string(line))
		if len(f) == 0 || f[0] != "cpu" {
			continue
		}
		if len(f) < 5 {
			return CPUTimes{}, fmt.Errorf("sysload: cpu line has %d fields, want at least 5", len(f))
		}
		var v [8]uint64
		for i := 1; i < len(f) && i <= len(v); i++ {
			n, err := strconv.ParseUint(f[i], 10, 64)
			if err != nil {
				return CPUTimes{}, fmt.Errorf("sysload: cpu field %d %q: not a counter", i, f[i])
			}
			v[i-1] = n
		}
		var t CPUTimes
		for _, n := range v {
			t.Total += n
		}
		idle := v[3] + v[4] // idle, iowait
		t.Busy = t.Total - idle
		return t, nil
	}
	return CPUTimes{}, errors.New("sysload: no aggregate cpu line")
}

// CPUPercent is the busy share between two samples, 0 when no tick passed
// (or the counters went backwards, as after a restore).
func CPUPercent(prev, cur CPUTimes) float64 {
	if cur.Total <= prev.Total || cur.Busy < prev.Busy {
		return 0
	}
	p := 100 * float64(cur.Busy-prev.Busy) / float64(cur.Total-prev.Total)
	return min(max(p, 0), 100)
}

// ParseMemory returns the percentage of memory not available to new work:
// 100 * (MemTotal - MemAvailable) / MemTotal. Kernels older than 3.14 have
// no MemAvailable; MemFree + Buffers + Cached stands in for it.
func ParseMemory(data []byte) (float64, error) {
	kb := map[string]uint64{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if len(f) == 0 {
			continue
		}
		if n, err := strconv.ParseUint(f[0], 10, 64); err == nil {
			kb[name] = n
		}
	}
	total := kb["MemTotal"]
	if total == 0 {
		return 0, errors.New("sysload: meminfo has no MemTotal")
	}
	avail, ok := kb["MemAvailable"]
	if !ok {
		avail = kb["MemFree"] + kb["Buffers"] + kb["Cached"]
	}
	avail = min(avail, total)
	return 100 * float64(total-avail) / float64(total), nil
}

// ParseLoad returns the 1-minute load average of /proc/loadavg.
func ParseLoad(data []byte) (float64, error) {
	f := strings.Fields(string(data))
	if len(f) == 0 {
		return 0, errors.New("sysload: loadavg is empty")
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil || v < 0 {
		return 0, fmt.Errorf("sysload: loadavg field %q: not a load", f[0])
	}
	return v, nil
}

// Sampler samples the host's load. It keeps the previous CPU counters, so
// one goroutine owns it.
type Sampler struct {
	dir  string
	prev CPUTimes
}

// NewSampler reads from procDir ("" for /proc) and takes the first CPU
// sample, so the first Sample covers the time since NewSampler.
func NewSampler(procDir string) *Sampler {
	if procDir == "" {
		procDir = "/proc"
	}
	s := &Sampler{dir: procDir}
	if data, err := os.ReadFile(filepath.Join(procDir, "stat")); err == nil {
		s.prev, _ = ParseCPU(data)
	}
	return s
}

// Sample reads the three figures. A figure that cannot be read is left 0
// and its error joined into the returned one; the others are still filled.
func (s *Sampler) Sample() (Usage, error) {
	var u Usage
	var errs []error
	if data, err := os.ReadFile(filepath.Join(s.dir, "stat")); err != nil {
		errs = append(errs, err)
	} else if cur, err := ParseCPU(data); err != nil {
		errs = append(errs, err)
	} else {
		u.CPU = CPUPercent(s.prev, cur)
		s.prev = cur
	}
	if data, err := os.ReadFile(filepath.Join(s.dir, "meminfo")); err != nil {
		errs = append(errs, err)
	} else if u.Memory, err = ParseMemory(data); err != nil {
		errs = append(errs, err)
	}
	if data, err := os.ReadFile(filepath.Join(s.dir, "loadavg")); err != nil {
		errs = append(errs, err)
	} else if u.Load, err = ParseLoad(data); err != nil {
		errs = append(errs, err)
	}
	return u, errors.Join(errs...)
}
