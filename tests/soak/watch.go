package soak

import (
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/beluga-scheduler/beluga/testkit/clustertest"
	"github.com/beluga-scheduler/beluga/testkit/metricstest"
)

// sample is what one look at the masters saw: the master that said it
// leads (beluga_leader 1 on its /metrics) and its term, or none.
type sample struct {
	at     time.Time
	leader string // process name; "" none
	epoch  int64
}

// probe is one API request and its answer (0: no answer).
type probe struct {
	at     time.Time
	status int
}

// watcher samples the masters' leadership and the API's answers every
// period until stopped. It reads /metrics of each master rather than the
// API, whose cluster view needs the API itself and its database.
type watcher struct {
	c      *clustertest.Cluster
	period time.Duration
	hc     *http.Client // of /metrics: a paused master must not hold a sample long
	api    *http.Client // of the API probes: a slow answer on a loaded machine is still an answer

	mu      sync.Mutex
	samples []sample
	probes  []probe
	stop    chan struct{}
	wg      sync.WaitGroup
}

func startWatcher(c *clustertest.Cluster, period time.Duration) *watcher {
	w := &watcher{c: c, period: period, hc: &http.Client{Timeout: time.Second},
		api: &http.Client{Timeout: 5 * time.Second}, stop: make(chan struct{})}
	w.wg.Add(2)
	go w.loop(w.sampleLeader)
	go w.loop(w.probeAPI)
	return w
}

func (w *watcher) loop(f func()) {
	defer w.wg.Done()
	tick := time.NewTicker(w.period)
	defer tick.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-tick.C:
			f()
		}
	}
}

func (w *watcher) sampleLeader() {
	s := sample{at: time.Now()}
	var wg sync.WaitGroup
	var mu sync.Mutex
	for _, m := range w.c.Masters {
		wg.Add(1)
		go func() { // a paused master answers nothing: ask each on its own
			defer wg.Done()
			code, sc, err := metricstest.Get(w.hc, "http://"+m.MetricsAddr+"/metrics", w.c.MetricsToken)
			if err != nil || code != http.StatusOK || sc.Value("beluga_leader") != 1 {
				return
			}
			mu.Lock()
			s.leader, s.epoch = m.Name, int64(sc.Value("beluga_epoch"))
			mu.Unlock()
		}()
	}
	wg.Wait()
	w.mu.Lock()
	w.samples = append(w.samples, s)
	w.mu.Unlock()
}

// probeAPI reads a page of instances: the API, its token check and the
// database in one request.
func (w *watcher) probeAPI() {
	p := probe{at: time.Now()}
	req, err := http.NewRequest(http.MethodGet, "http://"+w.c.API.Addr+"/api/v1/instances?limit=1", nil)
	if err == nil {
		req.Header.Set("Authorization", "Bearer "+w.c.Token)
		if resp, err := w.api.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			p.status = resp.StatusCode
		}
	}
	w.mu.Lock()
	w.probes = append(w.probes, p)
	w.mu.Unlock()
}

// Leader is the latest leader seen ("" none) and its epoch.
func (w *watcher) Leader() (string, int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.samples) == 0 {
		return "", 0
	}
	s := w.samples[len(w.samples)-1]
	return s.leader, s.epoch
}

// LeaderAfter is the leader of the latest sample, when that sample was
// taken after t ("" otherwise).
func (w *watcher) LeaderAfter(t time.Time) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if n := len(w.samples); n > 0 && w.samples[n-1].at.After(t) {
		return w.samples[n-1].leader
	}
	return ""
}

// Stop ends sampling and returns what was seen.
func (w *watcher) Stop() ([]sample, []probe) {
	close(w.stop)
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.samples, w.probes
}

// leaderGap is the longest span in [from, to] during which no master
// led: from the last sample that saw a leader (or from) to the next that
// saw one (or to).
func leaderGap(ss []sample, from, to time.Time) time.Duration {
	var gap time.Duration
	since := time.Time{}
	for _, s := range ss {
		if s.at.Before(from) {
			if s.leader == "" {
				since = from // leaderless already when the fault began
			} else {
				since = time.Time{}
			}
			continue
		}
		if s.at.After(to) {
			break
		}
		if s.leader == "" {
			if since.IsZero() {
				since = s.at
			}
			continue
		}
		if !since.IsZero() {
			gap = max(gap, s.at.Sub(since))
			since = time.Time{}
		}
	}
	if !since.IsZero() {
		gap = max(gap, to.Sub(since))
	}
	return gap
}

// availability counts the probes outside the windows that were answered
// without a 5xx, and those inside the windows by status; bad are the
// probes outside that were not.
func availability(ps []probe, windows [][2]time.Time) (ok, total int, inside map[int]int, bad []probe) {
	inside = map[int]int{}
	for _, p := range ps {
		in := false
		for _, w := range windows {
			if !p.at.Before(w[0]) && !p.at.After(w[1]) {
				in = true
				break
			}
		}
		if in {
			inside[p.status]++
			continue
		}
		total++
		if p.status != 0 && p.status < 500 {
			ok++
		} else {
			bad = append(bad, p)
		}
	}
	return ok, total, inside, bad
}

// termChange is the time from from to the first sample in [from, to]
// where a master leads in a later term than the one leading at from (0,
// false when the term did not change: the leader kept its term).
func termChange(ss []sample, from, to time.Time) (time.Duration, bool) {
	var before int64
	for _, s := range ss {
		if s.at.Before(from) {
			if s.leader != "" {
				before = s.epoch
			}
			continue
		}
		if s.at.After(to) {
			break
		}
		if s.leader != "" && s.epoch > before {
			return s.at.Sub(from), true
		}
	}
	return 0, false
}
