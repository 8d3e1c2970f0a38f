package spec_test

import (
	"testing"

	"github.com/beluga-scheduler/beluga/common/spec"
)

// TestTypeFieldsRoundTrip: an http task's fields survive the canonical form
// and a re-parse from storage, from YAML and JSON alike, with one hash.
func TestTypeFieldsRoundTrip(t *testing.T) {
	t.Parallel()
	y := "name: w\ntasks:\n  - name: a\n    type: http\n    url: http://h/x?d=${d}\n    headers: {A: b}\n    expect_status: [200, 201]\n    outputs: {id: data.id}\n"
	j := `{"name":"w","tasks":[{"outputs":{"id":"data.id"},"name":"a","type":"http","expect_status":[200,201],"url":"http://h/x?d=${d}","headers":{"A":"b"}}]}`
	var sums []string
	for _, src := range []string{y, j} {
		w, err := spec.Parse([]byte(src))
		if err != nil {
			t.Fatal(err)
		}
		raw, sum, err := w.Canonical()
		if err != nil {
			t.Fatal(err)
		}
		back, err := spec.ParseStored(raw)
		if err != nil {
			t.Fatalf("stored form does not parse: %v\n%s", err, raw)
		}
		if string(back.Tasks[0].Fields["url"]) != `"http://h/x?d=${d}"` || len(back.Tasks[0].Fields) != 4 {
			t.Fatalf("fields after the round trip: %s", raw)
		}
		sums = append(sums, sum)
	}
	if sums[0] != sums[1] {
		t.Errorf("YAML and JSON of one spec hash differently")
	}
}
