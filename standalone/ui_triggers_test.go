package standalone_test

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// deliver posts body to a trigger's hook as a sending system does: its
// token as a bearer, and an Idempotency-Key when key is set.
func deliver(t *testing.T, base, hook, token, key, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest("POST", base+hook, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestWebUITriggers: a trigger made on the workflow page (name and param
// mapping typed), its token read from the page once; three deliveries
// from outside (two with one Idempotency-Key) show as accepted, duplicate,
// accepted with two runs linked; after a rotation the old token is
// refused and shown so, with its reason.
func TestWebUITriggers(t *testing.T) {
	e := start(t, "")
	e.apply("name: hooked\nparams: {FILE: none}\ntasks:\n  - {name: a, command: \"echo file=${FILE}\"}\n")
	b := newBrowser(t, e.base, e.sessionToken())
	var token, hook string
	b.step(t, 120*time.Second, func(s *session) {
		s.open("#/workflows/demo/hooked")
		s.until("the triggers panel", `document.querySelector('#triggers-list tbody')?.textContent.includes('No triggers.')`)
		s.retype(`#trigger-name`, "on_upload")
		s.retype(`[aria-label="param name, row 1"]`, "FILE")
		s.retype(`[aria-label="JSON path, row 1"]`, "file.name")
		// A half-filled second row is named, and nothing is created.
		s.click(`#trigger-add-row`)
		s.retype(`[aria-label="param name, row 2"]`, "SIZE")
		s.click(`#trigger-create`)
		s.until("the half row named", `document.querySelector('#trigger-form .apierror')?.textContent.includes('row 2 needs both')`)
		s.click(`[aria-label="Remove mapping row 2"]`)
		s.click(`#trigger-create`)
		s.until("the token shown", `/\S{20,}/.test(document.querySelector('#trigger-token')?.textContent || '')`)
		token, hook = s.text(`#trigger-token`), s.text(`#trigger-hook`)
		s.click(`#trigger-token-copy`)
		s.until("copied or selected", `document.querySelector('#trigger-token-copied')?.textContent !== ''`)
		s.until("the trigger listed with its mapping", `document.querySelector('tr[data-trigger="on_upload"]')?.textContent.includes('FILE ← file.name')`)

		for _, d := range []struct {
			key  string
			want int
		}{{"k-1", http.StatusCreated}, {"k-1", http.StatusOK}, {"k-2", http.StatusCreated}} {
			if code, body := deliver(t, e.base, hook, token, d.key, `{"file":{"name":"a.csv"}}`); code != d.want {
				t.Fatalf("delivery %s: %d %s, want %d", d.key, code, body, d.want)
			}
		}
		s.until("three deliveries, two runs linked", `(() => {
			const rows = [...document.querySelectorAll('#trigger-deliveries tr[data-delivery]')];
			const outs = rows.map((r) => r.dataset.outcome).sort().join(',');
			const runs = new Set(rows.map((r) => r.querySelector('a[href^="#/instances/"]')?.getAttribute('href')).filter(Boolean));
			return rows.length === 3 && outs === 'accepted,accepted,duplicate' && runs.size === 2;
		})()`)

		s.click(`tr[data-trigger="on_upload"] button[data-act="rotate"]`)
		s.until("the rotation asked", `!!document.querySelector('dialog.dialog button.ok')`)
		s.click(`dialog.dialog button.ok`)
		s.until("a new token shown", fmt.Sprintf(`(() => { const t = document.querySelector('#trigger-token')?.textContent || '';
			return t !== '' && t !== %s && document.querySelector('#trigger-token-box').textContent.includes('old token is refused'); })()`, js(token)))
		if code, body := deliver(t, e.base, hook, token, "k-3", `{"file":{"name":"b.csv"}}`); code != http.StatusUnauthorized {
			t.Fatalf("the old token after rotation: %d %s", code, body)
		}
		s.until("the refused delivery shown with its reason", `[...document.querySelectorAll('#trigger-deliveries tr[data-outcome="refused"]')]
			.some((r) => r.textContent.includes('token is missing or wrong') && !r.querySelector('a[href^="#/instances/"]'))`)
		fresh := s.text(`#trigger-token`)
		if code, body := deliver(t, e.base, hook, fresh, "k-4", `{"file":{"name":"c.csv"}}`); code != http.StatusCreated {
			t.Fatalf("the new token: %d %s", code, body)
		}
		s.until("five deliveries", `document.querySelectorAll('#trigger-deliveries tr[data-delivery]').length === 5`)
	})
	var list struct {
		Items []struct {
			RunID int64 `json:"run_id"`
		} `json:"items"`
	}
	e.do("GET", "/api/v1/projects/demo/workflows/hooked/triggers/on_upload/deliveries", "", http.StatusOK, &list)
	runs := map[int64]bool{}
	for _, d := range list.Items {
		if d.RunID != 0 {
			runs[d.RunID] = true
		}
	}
	if len(list.Items) != 5 || len(runs) != 3 {
		t.Fatalf("deliveries %+v", list.Items)
	}
	for id := range runs {
		if iv := e.wait(id, time.Minute); iv.State != "succeeded" {
			t.Fatalf("run %d: %s", id, iv.State)
		}
	}
}
