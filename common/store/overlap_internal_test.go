package store

import (
	"slices"
	"testing"

	"github.com/beluga-scheduler/beluga/common/model"
)

func TestOverlapPlan(t *testing.T) {
	R, Q, S := fireRun, fireQueue, fireSkip
	for _, tc := range []struct {
		o    model.Overlap
		busy bool
		n    int
		want []fireAction
	}{
		{model.OverlapAllow, true, 3, []fireAction{R, R, R}},
		{"", true, 1, []fireAction{R}},
		{model.OverlapSkip, false, 1, []fireAction{R}},
		{model.OverlapSkip, true, 1, []fireAction{S}},
		{model.OverlapSkip, false, 3, []fireAction{R, S, S}},
		{model.OverlapWait, false, 1, []fireAction{R}},
		{model.OverlapWait, true, 2, []fireAction{Q, Q}},
		{model.OverlapWait, false, 3, []fireAction{R, Q, Q}},
		{model.OverlapReplace, false, 1, []fireAction{R}},
		{model.OverlapReplace, true, 1, []fireAction{Q}},
		{model.OverlapReplace, false, 3, []fireAction{S, S, R}},
		{model.OverlapReplace, true, 2, []fireAction{S, Q}},
	} {
		if got := overlapPlan(tc.o, tc.busy, tc.n); !slices.Equal(got, tc.want) {
			t.Errorf("%q busy=%v n=%d: got %v, want %v", tc.o, tc.busy, tc.n, got, tc.want)
		}
	}
}

func TestReleasable(t *testing.T) {
	w, v := wfKey{1, "w"}, wfKey{1, "v"}
	fresh := func() room {
		return room{serial: map[int64]bool{7: true}, busy: map[int64]bool{}, active: map[wfKey]int{}, limit: map[wfKey]int{}}
	}
	for _, tc := range []struct {
		name string
		q    []queuedRun
		prep func(r *room)
		want []int64
	}{
		{"serial schedule: one at a time, oldest first", []queuedRun{{1, 7, w}, {2, 7, w}}, nil, []int64{1}},
		{"serial schedule busy", []queuedRun{{1, 7, w}}, func(r *room) { r.busy[7] = true }, nil},
		{"schedule not serial (edited to allow)", []queuedRun{{1, 8, w}, {2, 8, w}}, nil, []int64{1, 2}},
		{"limit fills in order", []queuedRun{{1, 0, w}, {2, 0, w}, {3, 0, w}},
			func(r *room) { r.limit[w], r.active[w] = 3, 1 }, []int64{1, 2}},
		{"limit per workflow", []queuedRun{{1, 0, w}, {2, 0, v}},
			func(r *room) { r.limit[w], r.active[w] = 1, 1 }, []int64{2}},
		{"a serial time held by the limit holds the later ones", []queuedRun{{1, 7, w}, {2, 7, w}},
			func(r *room) { r.limit[w], r.active[w] = 1, 1 }, nil},
	} {
		r := fresh()
		if tc.prep != nil {
			tc.prep(&r)
		}
		if got := releasable(tc.q, r); !slices.Equal(got, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
		}
	}
}
