package worker

// metricStats are the worker's gauges at a scrape (common/metrics): atomic
// loads of the executor's counters.
func (w *Worker) metricStats() (running, queued, slots int) {
	st := w.Stats()
	return st.Running, st.Queued, st.Capacity
}
