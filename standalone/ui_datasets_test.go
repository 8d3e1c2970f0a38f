package standalone_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestWebUIDatasetLineage: an hourly producer and a daily consumer; one
// hour produced by a run, the other 23 posted through the API, and one
// posted again after the day's run. From the menu, with the mouse: the
// project's datasets, the dataset's producers -> consumers and its
// partitions (ready, late, the run that read them), then the consumer
// run's page with what it waited for, and the producer run's page with
// what it produced.
func TestWebUIDatasetLineage(t *testing.T) {
	t.Parallel()
	e := start(t, "")
	e.apply(`name: hour
tasks:
  - name: load
    command: "true"
    produces: ["events@${hour}"]
`)
	e.apply(`name: daily
on_datasets: [events@hourly]
run_grain: daily
tasks:
  - {name: report, command: "true"}
`)
	producer := e.run("hour", map[string]string{"hour": "2026-12-07T13"})
	e.succeeded(producer, 60*time.Second)
	for h := range 24 {
		if h != 13 {
			e.do("POST", "/api/v1/projects/demo/datasets/events/events", fmt.Sprintf(`{"partition":"2026-12-07T%02d"}`, h), http.StatusCreated, nil)
		}
	}
	e.evaluated("events")
	fires := e.datasetFires("daily")
	if len(fires) != 1 || fires[0].RunID == 0 {
		t.Fatalf("the day's ledger: %+v", fires)
	}
	consumer := fires[0].RunID
	e.succeeded(consumer, 60*time.Second)
	// Produced again after the run (late_data: ignore, the default).
	e.do("POST", "/api/v1/projects/demo/datasets/events/events", `{"partition":"2026-12-07T05"}`, http.StatusCreated, nil)
	e.evaluated("events")

	b := newBrowser(t, e.base, e.sessionToken())
	b.step(t, 120*time.Second, func(s *session) {
		s.open("#/instances")
		s.click(`#nav a[data-nav="datasets"]`)
		s.until("the projects", `!!document.querySelector('#dataset-projects a[href="#/datasets/demo"]')`)
		s.axe()
		s.click(`#dataset-projects a[href="#/datasets/demo"]`)
		s.until("the project's datasets", `!!document.querySelector('.datasets-table tr[data-dataset="events"]')`)
		row := `.datasets-table tr[data-dataset="events"]`
		s.until("its producer, consumer, grain and latest partition", `(() => { const r = document.querySelector(`+js(row)+`).textContent;
			return r.includes('hour.load') && r.includes('daily') && r.includes('hourly') && r.includes('2026-12-07T23') && r.includes('24'); })()`)
		s.axe()
		s.click(row + ` a[href="#/datasets/demo/events"]`)
		s.until("the lineage", `!!document.querySelector('#dataset-producers a[href="#/workflows/demo/hour"]') &&
			!!document.querySelector('#dataset-consumers [data-consumer="daily"] a[href="#/workflows/demo/daily"]')`)
		s.until("24 partitions, 23 ready and the late one", `document.querySelectorAll('table.partitions tr[data-partition]').length === 24 &&
			document.querySelectorAll('table.partitions tr[data-state="ready"]').length === 23 &&
			document.querySelector('table.partitions tr[data-partition="2026-12-07T05"]').dataset.state === 'late'`)
		s.until("each read by the day's run", fmt.Sprintf(`[...document.querySelectorAll('table.partitions tr[data-partition]')]
			.every(r => !!r.querySelector('a[href="#/instances/%d"]'))`, consumer))
		if txt := s.text(`table.partitions tr[data-partition="2026-12-07T13"]`); !containsAll(txt, fmt.Sprintf("run #%d", producer), "ready") {
			t.Fatalf("the hour produced by a run reads %q", txt)
		}
		s.axe()
		s.click(`table.partitions tr[data-partition="2026-12-07T00"] a[href="#/instances/` + fmt.Sprint(consumer) + `"]`)
		s.until("the run's datasets", `document.querySelectorAll('#run-datasets table.waited tr[data-input]').length === 24 &&
			!!document.querySelector('#run-datasets tr[data-input="events@2026-12-07T13"] a[href="#/datasets/demo/events"]') &&
			[...document.querySelectorAll('#run-datasets table.waited tr[data-input]')].every(r => !!r.querySelector('time[datetime]'))`)
		if txt := s.text(`#run-fire`); !containsAll(txt, "2026-12-07") {
			t.Fatalf("the run's fire reads %q", txt)
		}
		if txt := s.text(`#run-datasets`); !containsAll(txt, "No partition produced.") {
			t.Fatalf("the consumer's datasets read %q", txt)
		}
		s.axe()
		// Back to the dataset by its link, then to the producer run.
		s.click(`#run-datasets tr[data-input="events@2026-12-07T13"] a`)
		s.click(fmt.Sprintf(`table.partitions tr[data-partition="2026-12-07T13"] a[href="#/instances/%d"]`, producer))
		s.until("what the producer made", `!!document.querySelector('#run-datasets tr[data-produced="events@2026-12-07T13"] a[href="#/datasets/demo/events"]')`)
		if txt := s.text(`#run-datasets`); !containsAll(txt, "Not started by datasets.") {
			t.Fatalf("the producer's datasets read %q", txt)
		}
	})
}

func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}
