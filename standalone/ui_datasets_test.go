package standalone_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestWebUIDatasetLineage: an hourly producer and a daily consumer. With
// 23 hours posted through the API, from the menu with the mouse: the
// project's datasets, found by typing, the dataset's producers ->
// consumers and its partitions, each waiting. Once a run produces the
// last hour the day's run starts, and an hour is posted again after it:
// the partitions turn ready (the late one late) with the run that read
// them; following that link, the run's page lists what it waited for
// and when each was ready, and the producer run's page what it produced.
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
	emit := func(ds, part string) {
		e.do("POST", "/api/v1/projects/demo/datasets/"+ds+"/events", fmt.Sprintf(`{"partition":%q}`, part), http.StatusCreated, nil)
	}
	emit("orders", "2026-12-07") // a dataset nobody declares, to be filtered out
	for h := range 24 {
		if h != 13 {
			emit("events", fmt.Sprintf("2026-12-07T%02d", h))
		}
	}
	e.evaluated("events")
	if fs := e.datasetFires("daily"); len(fs) != 0 {
		t.Fatalf("the day fired with an hour missing: %+v", fs)
	}

	b := newBrowser(t, e.base, e.sessionToken())
	b.step(t, 120*time.Second, func(s *session) {
		s.open("#/instances")
		s.click(`#nav a[data-nav="datasets"]`)
		s.until("the projects", `!!document.querySelector('#dataset-projects a[href="#/datasets/demo"]')`)
		s.axe()
		s.click(`#dataset-projects a[href="#/datasets/demo"]`)
		s.until("the project's datasets", `document.querySelectorAll('.datasets-table tr[data-dataset]').length === 2`)
		s.retype(`#dataset-find`, "events")
		s.until("only events", `document.querySelectorAll('.datasets-table tr[data-dataset]').length === 1 &&
			!!document.querySelector('.datasets-table tr[data-dataset="events"]')`)
		row := `.datasets-table tr[data-dataset="events"]`
		if txt := s.text(row); !containsAll(txt, "hour.load", "daily", "hourly", "2026-12-07T23", "23") {
			t.Fatalf("the events row reads %q", txt)
		}
		s.axe()
		s.click(row + ` a[href="#/datasets/demo/events"]`)
		s.until("the lineage", `!!document.querySelector('#dataset-producers a[href="#/workflows/demo/hour"]') &&
			!!document.querySelector('#dataset-consumers [data-consumer="daily"] a[href="#/workflows/demo/daily"]')`)
		s.until("23 partitions, each waiting for the day's run", `document.querySelectorAll('table.partitions tr[data-partition]').length === 23 &&
			document.querySelectorAll('table.partitions tr[data-state="waiting"]').length === 23 &&
			!document.querySelector('table.partitions a[href^="#/instances/"]')`)
	})

	producer := e.run("hour", map[string]string{"hour": "2026-12-07T13"})
	e.succeeded(producer, 60*time.Second)
	e.evaluated("events")
	fires := e.datasetFires("daily")
	if len(fires) != 1 || fires[0].RunID == 0 {
		t.Fatalf("the day's ledger: %+v", fires)
	}
	consumer := fires[0].RunID
	e.succeeded(consumer, 60*time.Second)
	emit("events", "2026-12-07T05") // again, after the run (late_data: ignore, the default)
	e.evaluated("events")

	b.step(t, 120*time.Second, func(s *session) {
		// The page reads the dataset again every 10 s.
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
		s.until("the dataset again, with its readers", fmt.Sprintf(`!!document.querySelector('table.partitions tr[data-partition="2026-12-07T13"] a[href="#/instances/%d"]')`, consumer))
		s.click(fmt.Sprintf(`table.partitions tr[data-partition="2026-12-07T13"] a[href="#/instances/%d"]`, producer))
		s.until("what the producer made", `!!document.querySelector('#run-datasets tr[data-produced="events@2026-12-07T13"] a[href="#/datasets/demo/events"]')`)
		if txt := s.text(`#run-datasets`); strings.Contains(txt, "Waited for") {
			t.Fatalf("the producer's datasets read %q: it was not started by datasets", txt)
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
