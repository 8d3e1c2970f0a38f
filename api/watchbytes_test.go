package api

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestInstanceWatchBytes measures what the instance page's watch costs
// per update at 1,000 and 5,000 tasks, by its protocol (web/src/
// InstancePage.tsx): the events of the changed tasks over the stream (not
// compressed), then a read of the changed rows, gzipped as a browser takes
// it: up to FEW_ROWS (20) one by one plus the instance's head (one row,
// 50 pending), more as the page of rows they span. A whole read (what
// the page polled every 2 s before the stream) is printed beside it.
// The budget is 50 KB per update.
func TestInstanceWatchBytes(t *testing.T) {
	t.Parallel()
	b := setup(t, options{})
	srv := b.srv
	get := func(path string) int {
		t.Helper()
		req, _ := http.NewRequest("GET", srv.URL+path, nil)
		req.Header.Set("Accept-Encoding", "gzip") // set here, so the client leaves the body gzipped
		req.Header.Set("Authorization", "Bearer "+b.token)
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		var n int
		for buf := make([]byte, 32<<10); ; {
			k, err := res.Body.Read(buf)
			n += k
			if err != nil {
				break
			}
		}
		if res.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", path, res.StatusCode)
		}
		return n
	}
	// stream reads the instance's first k events from the start, counting
	// the bytes of their frames.
	stream := func(id int64, k int) int {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, "GET", fmt.Sprintf("%s/api/v1/events?instance=%d&after=0", srv.URL, id), nil)
		req.Header.Set("Accept-Encoding", "gzip")
		req.Header.Set("Authorization", "Bearer "+b.token)
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		r := bufio.NewReader(res.Body)
		n, seen := 0, 0
		for seen < k {
			line, err := r.ReadString('\n')
			if err != nil {
				t.Fatalf("the stream of instance %d ended after %d events: %v", id, seen, err)
			}
			n += len(line)
			if strings.HasPrefix(line, "event: task") {
				seen++
			}
		}
		return n
	}
	for _, size := range []int{1000, 5000} {
		inst := seedFanout(t, b, fmt.Sprintf("watch%d", size), size, size/2, false)
		var d InstanceDetail
		b.get(fmt.Sprintf("/api/v1/instances/%d?tasks_limit=%d", inst.ID, size)).want(t, http.StatusOK).json(t, &d)
		if len(d.Tasks) != size {
			t.Fatalf("%d tasks read, want %d", len(d.Tasks), size)
		}
		whole := 0
		for off := 0; off < size; off += 1000 {
			whole += get(fmt.Sprintf("/api/v1/instances/%d?tasks_offset=%d&tasks_limit=1000&pending_limit=50", inst.ID, off))
		}
		head := fmt.Sprintf("/api/v1/instances/%d?tasks_limit=1&tasks_offset=%d&pending_limit=50", inst.ID, size-1)
		for _, k := range []int{1, 20, 100} {
			events := stream(inst.ID, k)
			rows := 0
			if k <= 20 {
				for i := range k {
					rows += get(fmt.Sprintf("/api/v1/task-instances/%d", d.Tasks[size/2+i].ID))
				}
				rows += get(head)
			} else {
				rows = get(fmt.Sprintf("/api/v1/instances/%d?tasks_limit=%d&tasks_offset=%d&pending_limit=50", inst.ID, k, size/2))
			}
			per := events + rows
			t.Logf("%d tasks, %3d changed: %6d bytes per update (events %d, reads %d gzipped); a whole read %d bytes gzipped",
				size, k, per, events, rows, whole)
			if per > 50<<10 {
				t.Errorf("%d tasks, %d changed: %d bytes per update, over 50 KB", size, k, per)
			}
		}
	}
}
