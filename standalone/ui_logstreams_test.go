package standalone_test

import (
	"fmt"
	"net/http"
	"path/filepath"
	"testing"
	"time"
)

// TestWebUILogStreams: the log viewer shows a task's stdout and stderr in
// one log, its stderr line marked "err" (not by colour alone), and filters
// the lines by stream, search working within the filter.
func TestWebUILogStreams(t *testing.T) {
	t.Parallel()
	e := start(t, "")
	b := newBrowser(t, e.base, e.sessionToken())
	// w waits until the log holds its text, so that the next print is
	// surely later than the last one reached the worker.
	logf := filepath.Join(e.dir, "worker", "logs") + `/$BELUGA_WORKFLOW_INSTANCE_ID/$BELUGA_TASK_INSTANCE_ID.log`
	cmd := `w() { until grep -qF -- "$1" "` + logf + `"; do sleep 0.01; done; }; ` +
		`echo step one; w 'step one'; echo 'oops: disk low' >&2; w oops; echo step two`
	e.do("PUT", "/api/v1/projects/demo/workflows/mixed", fmt.Sprintf("name: mixed\ntasks:\n  - {name: say, command: %q}\n", cmd), http.StatusCreated, nil)
	id := e.run("mixed", nil)
	e.wait(id, 30*time.Second)

	b.step(t, 60*time.Second, func(s *session) {
		s.open(fmt.Sprintf("#/instances/%d", id))
		s.click(`.dag .node[data-task=say]`)
		s.until("its log, the stderr line marked", logText+` === 'step one\noops: disk low\nstep two\n' &&
			[...document.querySelectorAll('.log .ln.stderr')].map(l => l.querySelector('.ln-err').textContent + ' ' + l.querySelector('.ln-text').textContent).join() === 'err oops: disk low' &&
			document.querySelectorAll('.log .ln:not(.stderr) .ln-err').length === 2 &&
			[...document.querySelectorAll('.log .ln:not(.stderr) .ln-err')].every(m => m.textContent === '')`)
		s.axe()
		s.choose(`.logstream`, "stde")
		s.until("stderr alone", logText+` === 'oops: disk low\n' && document.querySelector('.log .ln').dataset.line === '2'`)
		s.choose(`.logstream`, "stdo")
		s.until("stdout alone", logText+` === 'step one\nstep two\n'`)
		s.typeInto(`.logsearch`, "two", false)
		s.until("one match in stdout", `document.querySelector('.loghits').textContent === '1 of 1 matches' &&
			document.querySelector('.log .ln.match .ln-text')?.textContent === 'step two'`)
		s.choose(`.logstream`, "a")
		s.until("all lines again", logText+` === 'step one\noops: disk low\nstep two\n' && document.querySelector('.log .ln.match')?.dataset.line === '3'`)
	})
}
