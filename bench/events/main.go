// Command events measures what the event stream costs and how fast it is:
// fanout-1000 throughput of a `beluga standalone` with no event reader and
// with one SSE client attached (and, given -base-bin, of another build
// without the outbox, for comparison), and the event latency from a state
// change's commit (the event's time, taken in its transaction) to the SSE
// client, p50 and p99. Run by `make bench`; it prints, it does not judge.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/beluga-scheduler/beluga/bench/benchkit"
	"github.com/beluga-scheduler/beluga/common/model"
)

func main() {
	bin := flag.String("bin", "bin/beluga", "beluga binary")
	base := flag.String("base-bin", "", "a beluga build without the event outbox, to compare with (optional)")
	runs := flag.Int("runs", 3, "fanout-1000 runs per setting (the median is printed)")
	flag.Parse()
	if *base != "" {
		if err := measure("base build, no outbox", *base, *runs, false); err != nil {
			fmt.Fprintln(os.Stderr, "bench events:", err)
			os.Exit(1)
		}
	}
	for _, sse := range []bool{false, true} {
		label := "outbox, no reader"
		if sse {
			label = "outbox + 1 SSE client"
		}
		if err := measure(label, *bin, *runs, sse); err != nil {
			fmt.Fprintln(os.Stderr, "bench events:", err)
			os.Exit(1)
		}
	}
}

func measure(label, bin string, runs int, sse bool) error {
	sa, err := benchkit.LaunchStandalone(bin, "beluga-bench-events-")
	if err != nil {
		return err
	}
	defer sa.Close()
	t, p := sa.Target, sa.Proc
	if err := t.Apply(benchkit.FanoutSpec("fanout1000", 1000)); err != nil {
		return err
	}
	if _, err := t.RunAndWait("fanout1000"); err != nil { // warm-up
		return err
	}
	var lat *latencies
	if sse {
		var stop func()
		if lat, stop, err = attach(p.Base, t.API.Token()); err != nil {
			return err
		}
		defer stop()
	}
	var walls []time.Duration
	for range runs {
		inst, err := t.RunAndWait("fanout1000")
		if err != nil {
			return err
		}
		walls = append(walls, benchkit.Wall(inst))
	}
	slices.Sort(walls)
	line := benchkit.FanoutLine("fanout-1000, "+label, walls[len(walls)/2], 1001) +
		fmt.Sprintf(" (median of %d; min %v max %v)", len(walls), walls[0].Round(time.Millisecond), walls[len(walls)-1].Round(time.Millisecond))
	if lat != nil {
		ds := lat.wait(runs * 3000)
		line += fmt.Sprintf("; event latency commit -> SSE client p50 %v p99 %v (%d events)",
			benchkit.Pct(ds, 50), benchkit.Pct(ds, 99), len(ds))
	}
	fmt.Println(line)
	return nil
}

type latencies struct {
	mu sync.Mutex
	ds []time.Duration
}

// wait returns the latencies once at least n arrived (or after 10 s).
func (l *latencies) wait(n int) []time.Duration {
	deadline := time.Now().Add(10 * time.Second)
	for {
		l.mu.Lock()
		got := len(l.ds)
		out := slices.Clone(l.ds)
		l.mu.Unlock()
		if got >= n || time.Now().After(deadline) {
			return out
		}
		time.Sleep(10 * time.Millisecond) // waiting on the reader's tail
	}
}

// attach opens an SSE client from now on and records each event's latency.
func attach(base, token string) (*latencies, func(), error) {
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", base+"/api/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		cancel()
		return nil, nil, fmt.Errorf("GET /api/v1/events: %s", resp.Status)
	}
	l := &latencies{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			data, ok := strings.CutPrefix(sc.Text(), "data: ")
			if !ok {
				continue
			}
			var e model.Event
			if json.Unmarshal([]byte(data), &e) != nil {
				return
			}
			d := time.Since(e.Time)
			l.mu.Lock()
			l.ds = append(l.ds, d)
			l.mu.Unlock()
		}
	}()
	return l, func() { cancel(); <-done }, nil
}
