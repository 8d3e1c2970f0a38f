package standalone_test

import (
	"testing"
	"time"
)

// TestUIPaletteDrag: a task type dragged from the palette onto the graph is
// added where it was dropped; a click still adds one beside the others.
func TestUIPaletteDrag(t *testing.T) {
	t.Parallel()
	e := start(t, "")
	b := newBrowser(t, e.base, e.sessionToken())
	b.step(t, 30*time.Second, func(s *session) {
		s.open("#/edit/demo")
		s.until("the palette", `!!document.querySelector('.palette .paltype[data-type=http]') && !!document.querySelector('.editflow .react-flow__pane')`)
		var before int
		s.eval(`document.querySelectorAll('.editflow .react-flow__node').length`, &before)
		s.drag(`.palette .paltype[data-type=http]`, `.editflow .react-flow__pane`)
		s.until("the dropped task at the drop point", `(() => {
			const n = document.querySelector('.editflow .react-flow__node[data-id=http_1]');
			if (!n) return false;
			const b = n.getBoundingClientRect(), p = document.querySelector('.editflow .react-flow__pane').getBoundingClientRect();
			const cx = b.x + b.width / 2, cy = b.y + b.height / 2, px = p.x + p.width / 2, py = p.y + p.height / 2;
			return Math.abs(cx - px) < 8 && Math.abs(cy - py) < 8;
		})()`)
		var after int
		s.eval(`document.querySelectorAll('.editflow .react-flow__node').length`, &after)
		if after != before+1 {
			t.Fatalf("%d nodes after one drop, had %d", after, before)
		}
		s.click(`.palette .paltype[data-type=sql]`)
		s.until("the clicked task", `!!document.querySelector('.editflow .react-flow__node[data-id=sql_1]')`)
	})
}
