package standalone_test

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/testkit/wait"
)

type datasetView struct {
	Name          string `json:"name"`
	Partitions    int    `json:"partitions"`
	PartitionList []struct {
		Key    string `json:"key"`
		Events []struct {
			Producer  string `json:"producer"`
			RunID     int64  `json:"run_id"`
			Evaluated bool   `json:"evaluated"`
		} `json:"events"`
	} `json:"partition_list"`
}

type fireView struct {
	Partition string `json:"partition"`
	Outcome   string `json:"outcome"`
	Rerun     bool   `json:"rerun"`
	RunID     int64  `json:"run_id"`
}

// evaluated waits until the leader has evaluated every event of the
// dataset and returns it.
func (e *env) evaluated(name string) datasetView {
	e.t.Helper()
	var d datasetView
	wait.UntilErr(e.t, 60*time.Second, "the leader to evaluate the events of "+name, func() error {
		d = datasetView{}
		e.do("GET", "/api/v1/projects/demo/datasets/"+name+"?limit=100", "", http.StatusOK, &d)
		for _, p := range d.PartitionList {
			for _, ev := range p.Events {
				if !ev.Evaluated {
					return fmt.Errorf("%s@%s by %s not evaluated", name, p.Key, ev.Producer)
				}
			}
		}
		return nil
	})
	return d
}

func (e *env) datasetFires(workflow string) []fireView {
	e.t.Helper()
	var l struct {
		Fires []fireView `json:"fires"`
	}
	e.do("GET", "/api/v1/projects/demo/workflows/"+workflow+"/dataset-fires", "", http.StatusOK, &l)
	return l.Fires
}

// TestDailyConsumerOfHourlyPartitions is the case end to end: a
// task produces 23 hours of a day by its output, another the late 13th
// hour by its spec's produces; the daily consumer runs once, after the
// late hour, with the day as bizdate; an hour produced again from outside
// reruns it under late_data: rerun, and under ignore is only recorded.
func TestDailyConsumerOfHourlyPartitions(t *testing.T) {
	t.Parallel()
	e := start(t, "")
	out := filepath.Join(e.dir, "daily.txt")
	var hours []string
	for h := range 24 {
		if h != 13 {
			hours = append(hours, fmt.Sprintf("events@2026-12-07T%02d", h))
		}
	}
	e.apply(`name: bulk
tasks:
  - name: load
    command: echo '${setValue(produces=` + strings.Join(hours, ",") + `)}'
`)
	e.apply(`name: hour
tasks:
  - name: load
    command: echo "$BELUGA_PRODUCES" > ` + filepath.Join(e.dir, "produces.txt") + `
    produces: ["events@${hour}"]
`)
	consumer := `name: daily
on_datasets: [events@hourly]
run_grain: daily
late_data: %s
tasks:
  - name: report
    command: echo "$bizdate $partition" >> ` + out + `
`
	e.apply(fmt.Sprintf(consumer, "rerun"))
	e.do("PUT", "/api/v1/projects/demo/workflows/daily", `name: daily
on_datasets: [events@weekly]
tasks:
  - {name: report, command: "true"}
`, http.StatusBadRequest, nil)

	// A produces entry whose param the run lacks fails the attempt before
	// it runs, saying why.
	if iv := e.wait(e.run("hour", nil), 60*time.Second); iv.State != "failed" {
		t.Fatalf("hour without its param: %s", iv.State)
	} else if d := e.detail(iv.ID); !strings.Contains(d.Reason, `produces "events@${hour}"`) {
		t.Fatalf("hour without its param failed for %q", d.Reason)
	}
	e.succeeded(e.run("bulk", nil), 60*time.Second)
	if d := e.evaluated("events"); d.Partitions != 23 {
		t.Fatalf("after the bulk load: %d partitions, want 23", d.Partitions)
	}
	if n := e.runsOfWorkflow("daily"); n != 0 {
		t.Fatalf("daily ran %d times with an hour missing", n)
	}
	late := e.run("hour", map[string]string{"hour": "2026-12-07T13"})
	e.succeeded(late, 60*time.Second)
	if got := fileText(t, filepath.Join(e.dir, "produces.txt")); got != "events@2026-12-07T13" {
		t.Fatalf("the task saw BELUGA_PRODUCES=%q", got)
	}
	e.evaluated("events")
	fires := e.datasetFires("daily")
	if len(fires) != 1 || fires[0].Partition != "2026-12-07" || fires[0].Outcome != "fired" || fires[0].RunID == 0 {
		t.Fatalf("after the late hour: ledger %+v", fires)
	}
	e.succeeded(fires[0].RunID, 60*time.Second)
	if got := fileText(t, out); got != "20261207 2026-12-07" {
		t.Fatalf("the daily run saw %q", got)
	}
	var rd struct {
		WaitedFor []struct {
			Partition string `json:"partition"`
			Produced  bool   `json:"produced"`
		} `json:"waited_for"`
		Produced []struct {
			Partition string `json:"partition"`
		} `json:"produced"`
	}
	e.do("GET", fmt.Sprintf("/api/v1/instances/%d/datasets", fires[0].RunID), "", http.StatusOK, &rd)
	if len(rd.WaitedFor) != 24 || !rd.WaitedFor[13].Produced || rd.WaitedFor[13].Partition != "2026-12-07T13" {
		t.Fatalf("the daily run waited for %+v", rd.WaitedFor)
	}
	e.do("GET", fmt.Sprintf("/api/v1/instances/%d/datasets", late), "", http.StatusOK, &rd)
	if len(rd.Produced) != 1 || rd.Produced[0].Partition != "2026-12-07T13" {
		t.Fatalf("the late run produced %+v", rd.Produced)
	}

	// Produced again from outside: a rerun; its retry with the key: nothing.
	e.do("POST", "/api/v1/projects/demo/datasets/events/events", `{"partition": "2026120705"}`, http.StatusCreated, nil)
	e.evaluated("events")
	fires = e.datasetFires("daily")
	if len(fires) != 2 || !fires[0].Rerun || fires[0].RunID == 0 {
		t.Fatalf("after a re-produce under rerun: ledger %+v", fires)
	}
	e.succeeded(fires[0].RunID, 60*time.Second)

	e.apply(fmt.Sprintf(consumer, "ignore"))
	e.do("POST", "/api/v1/projects/demo/datasets/events/events", `{"partition": "2026-12-07T06"}`, http.StatusCreated, nil)
	e.evaluated("events")
	fires = e.datasetFires("daily")
	if len(fires) != 3 || fires[0].Outcome != "ignored" || fires[0].RunID != 0 {
		t.Fatalf("after a re-produce under ignore: ledger %+v", fires)
	}
	if n := e.runsOfWorkflow("daily"); n != 2 {
		t.Fatalf("daily ran %d times, want 2 (first, rerun)", n)
	}
	b, _ := os.ReadFile(out)
	if got := strings.Count(string(b), "20261207"); got != 2 {
		t.Fatalf("the report ran %d times: %q", got, b)
	}
}
