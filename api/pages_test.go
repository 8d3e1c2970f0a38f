package api

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
)

// TestListsPageByCursor: the workflow and schedule lists answer a page
// and a next_cursor when asked for a limit, go on from the cursor to the
// last page (no next_cursor), keep a name prefix, and answer everything
// without paging parameters as before; a bad cursor or prefix is a 400
// naming it.
func TestListsPageByCursor(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	b.mustProject("p")
	for i := range 7 {
		name := fmt.Sprintf("w%d", i)
		b.putSpec("p", name, "application/yaml", "name: "+name+"\ntasks:\n  - {name: a, command: \"true\"}\n").want(t, http.StatusCreated)
		b.send("PUT", "/api/v1/projects/p/workflows/"+name+"/schedule", `{"cron":"@daily"}`).want(t, http.StatusCreated)
	}
	walk := func(path string) []string {
		var names []string
		cursor := ""
		for pages := 0; ; pages++ {
			var l struct {
				Items []struct {
					Name     string `json:"name"`
					Workflow string `json:"workflow"`
				} `json:"items"`
				NextCursor string `json:"next_cursor"`
			}
			q := path + "&cursor=" + url.QueryEscape(cursor)
			b.send("GET", q, "").want(t, http.StatusOK).json(t, &l)
			if len(l.Items) > 3 {
				t.Fatalf("%s: %d items, limit 3", q, len(l.Items))
			}
			for _, it := range l.Items {
				names = append(names, it.Name+it.Workflow)
			}
			if l.NextCursor == "" {
				return names
			}
			if pages > 10 {
				t.Fatalf("%s: no end", path)
			}
			cursor = l.NextCursor
		}
	}
	want := "[w0 w1 w2 w3 w4 w5 w6]"
	if got := fmt.Sprint(walk("/api/v1/projects/p/workflows?limit=3")); got != want {
		t.Fatalf("workflow pages %s, want %s", got, want)
	}
	if got := fmt.Sprint(walk("/api/v1/schedules?limit=3&project=p")); got != want {
		t.Fatalf("schedule pages %s, want %s", got, want)
	}
	if got := fmt.Sprint(walk("/api/v1/schedules?limit=3&prefix=w5")); got != "[w5]" {
		t.Fatalf("schedules with prefix w5: %s", got)
	}
	var all List[Workflow]
	b.send("GET", "/api/v1/projects/p/workflows", "").want(t, http.StatusOK).json(t, &all)
	if len(all.Items) != 7 || all.NextCursor != "" {
		t.Fatalf("unpaged list: %d items, cursor %q", len(all.Items), all.NextCursor)
	}
	for _, bad := range []string{"/api/v1/projects/p/workflows?cursor=%21%21", "/api/v1/schedules?cursor=eA", "/api/v1/schedules?prefix=a%2Fb", "/api/v1/projects/p/workflows?limit=0"} {
		b.send("GET", bad, "").wantError(t, http.StatusBadRequest, "bad_request")
	}
}
