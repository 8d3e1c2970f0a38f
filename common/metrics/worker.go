package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// WorkerStats is what a worker reports at a scrape: its counters are atomic
// loads, so the gauges cost the task path nothing.
type WorkerStats func() (running, queued, slots int)

var (
	runningDesc = prometheus.NewDesc(ns+"_worker_running_tasks", "Tasks running on this worker.", []string{"worker"}, nil)
	queuedDesc  = prometheus.NewDesc(ns+"_worker_queued_tasks", "Tasks acked and waiting for a slot on this worker.", []string{"worker"}, nil)
	freeDesc    = prometheus.NewDesc(ns+"_worker_free_slots", "Free task slots on this worker.", []string{"worker"}, nil)
	slotsDesc   = prometheus.NewDesc(ns+"_worker_slots", "Task slots of this worker.", []string{"worker"}, nil)
)

// workers collects the gauges of the workers this process runs (one; a
// test may run several).
type workers struct {
	mu sync.Mutex
	by map[string]WorkerStats
}

var workerStats = &workers{by: map[string]WorkerStats{}}

// RegisterWorker adds a worker's gauges, labelled with its address, until
// the returned func is called.
func RegisterWorker(addr string, stats WorkerStats) (unregister func()) {
	workerStats.mu.Lock()
	workerStats.by[addr] = stats
	workerStats.mu.Unlock()
	return func() {
		workerStats.mu.Lock()
		delete(workerStats.by, addr)
		workerStats.mu.Unlock()
	}
}

func (w *workers) Describe(ch chan<- *prometheus.Desc) {
	ch <- runningDesc
	ch <- queuedDesc
	ch <- freeDesc
	ch <- slotsDesc
}

func (w *workers) Collect(ch chan<- prometheus.Metric) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for addr, stats := range w.by {
		running, queued, slots := stats()
		ch <- prometheus.MustNewConstMetric(runningDesc, prometheus.GaugeValue, float64(running), addr)
		ch <- prometheus.MustNewConstMetric(queuedDesc, prometheus.GaugeValue, float64(queued), addr)
		ch <- prometheus.MustNewConstMetric(freeDesc, prometheus.GaugeValue, float64(max(slots-running, 0)), addr)
		ch <- prometheus.MustNewConstMetric(slotsDesc, prometheus.GaugeValue, float64(slots), addr)
	}
}
