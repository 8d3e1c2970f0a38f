// Package metricstest scrapes a Beluga /metrics endpoint for tests and
// reads values out of it.
package metricstest

import (
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Scrape is one parsed scrape: metric families by name.
type Scrape map[string]*dto.MetricFamily

// Get scrapes url with the bearer token; it returns the status and, on
// 200, the parsed families.
func Get(client *http.Client, url, token string) (int, Scrape, error) {
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, nil, nil
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return resp.StatusCode, nil, fmt.Errorf("parse %s: %w", url, err)
	}
	return resp.StatusCode, fams, nil
}

// Has reports whether the family is in the scrape.
// Gather reads g (a process's own registry, metrics.Registry) as a scrape
// would, for tests in the process that moves the metrics.
func Gather(g prometheus.Gatherer) (Scrape, error) {
	fams, err := g.Gather()
	if err != nil {
		return nil, fmt.Errorf("gather metrics: %w", err)
	}
	s := Scrape{}
	for _, f := range fams {
		s[f.GetName()] = f
	}
	return s, nil
}

func (s Scrape) Has(name string) bool { return s[name] != nil }

// Value sums the family's series whose labels include want ("k=v" pairs):
// a counter's or gauge's value, a histogram's count.
func (s Scrape) Value(name string, want ...string) float64 {
	f := s[name]
	if f == nil {
		return 0
	}
	total := 0.0
	for _, m := range f.GetMetric() {
		if !matches(m, want) {
			continue
		}
		switch {
		case m.Counter != nil:
			total += m.Counter.GetValue()
		case m.Gauge != nil:
			total += m.Gauge.GetValue()
		case m.Histogram != nil:
			total += float64(m.Histogram.GetSampleCount())
		case m.Untyped != nil:
			total += m.Untyped.GetValue()
		}
	}
	return total
}

func matches(m *dto.Metric, want []string) bool {
	for _, kv := range want {
		k, v, _ := strings.Cut(kv, "=")
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == k && l.GetValue() == v {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}
