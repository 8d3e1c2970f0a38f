package standalone_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
)

// subWorkflowShim adds the sub_workflow fields (parent on an instance,
// child_instance_id and message on a task) to real instance answers, until
// the API serves them: instance 1's task a names instance 2 as its child,
// and instance 2 names instance 1 as its parent. What is tested is the UI's
// side of that contract, and that it tolerates the fields' absence.
const subWorkflowShim = `(() => {
	const real = window.fetch;
	window.fetch = async (u, o) => {
		const r = await real(u, o);
		const m = String(u).match(/^\/api\/v1\/instances\/(\d+)(\?|$)/);
		if (!m || !r.ok) return r;
		const d = await r.clone().json();
		if (m[1] === '1') for (const t of d.tasks || []) if (t.name === 'a') { t.child_instance_id = 2; t.message = 'sub-workflow demo/child instance 2 succeeded'; }
		if (m[1] === '2') d.parent = {instance_id: 1, task_instance_id: (d.tasks || [])[0]?.id || 1};
		return new Response(JSON.stringify(d), {status: r.status, headers: r.headers});
	};
})()`

// TestUISubWorkflowLinks: a task with a child instance links to it and shows
// its message; the child links back to its parent; an instance without the
// fields shows neither.
func TestUISubWorkflowLinks(t *testing.T) {
	e := start(t, "")
	e.apply("name: one\ntasks:\n  - {name: a, command: \"true\"}\n")
	first := e.run("one", nil)
	e.succeeded(first, 30*time.Second)
	second := e.run("one", nil)
	e.succeeded(second, 30*time.Second)
	if first != 1 || second != 2 {
		t.Fatalf("instances %d and %d, the shim wants 1 and 2", first, second)
	}
	b := newBrowser(t, e.base, e.sessionToken())
	b.step(t, 30*time.Second, func(s *session) {
		// Without the fields: no links, no message.
		s.open(fmt.Sprintf("#/instances/%d", first))
		s.until("the task listed", `!!document.querySelector('table.tasks tr[data-task=a]')`)
		var none bool
		s.eval(`!document.querySelector('.child-link') && !document.querySelector('#parent-link') && !document.querySelector('table.tasks .message')`, &none)
		if !none {
			t.Fatal("sub-workflow links shown for an instance without them")
		}
	})
	b.step(t, 30*time.Second, func(s *session) {
		var script page.ScriptIdentifier
		s.run("install the shim", chromedp.ActionFunc(func(ctx context.Context) error {
			var err error
			script, err = page.AddScriptToEvaluateOnNewDocument(subWorkflowShim).Do(ctx)
			return err
		}))
		defer s.run("remove the shim", chromedp.ActionFunc(func(ctx context.Context) error {
			return page.RemoveScriptToEvaluateOnNewDocument(script).Do(ctx)
		}))
		s.run("blank", chromedp.Navigate("about:blank"))
		s.open("#/instances/1")
		s.until("the child link and message", `(() => {
			const r = document.querySelector('table.tasks tr[data-task=a]');
			return r?.querySelector('a.child-link')?.getAttribute('href') === '#/instances/2' &&
				r.querySelector('.message')?.textContent === 'sub-workflow demo/child instance 2 succeeded';
		})()`)
		s.run("open the child", chromedp.Click(`table.tasks tr[data-task=a] a.child-link`, chromedp.ByQuery))
		s.until("the child's parent link", `location.hash === '#/instances/2' && document.querySelector('#parent-link')?.getAttribute('href') === '#/instances/1'`)
		s.run("back to the parent", chromedp.Click(`#parent-link`, chromedp.ByQuery))
		s.until("the parent", `location.hash === '#/instances/1' && !!document.querySelector('table.tasks a.child-link')`)
	})
	var iv struct{ State string }
	e.do("GET", fmt.Sprintf("/api/v1/instances/%d", first), "", http.StatusOK, &iv)
}
