package store

import (
	"fmt"
	"testing"
)

func TestFairClaim(t *testing.T) {
	cmds := func(ids ...int64) []commandRow {
		out := make([]commandRow, len(ids))
		for i, id := range ids {
			out[i] = commandRow{ID: id}
		}
		return out
	}
	for _, c := range []struct {
		name           string
		manual, oldest []commandRow
		limit          int
		want           string
	}{
		{"no manual: the oldest", nil, cmds(1, 2, 3), 2, "[1 2]"},
		{"manual first, then the oldest", cmds(9), cmds(1, 2, 3), 3, "[9 1 2]"},
		{"a manual among the oldest is taken once", cmds(2, 9), cmds(1, 2, 3), 4, "[2 9 1 3]"},
		{"only manual", cmds(5, 6), cmds(5, 6), 4, "[5 6]"},
		{"nothing", nil, nil, 4, "[]"},
	} {
		got := fairClaim(c.manual, c.oldest, c.limit)
		ids := make([]int64, len(got))
		for i, g := range got {
			ids[i] = g.ID
		}
		if s := fmt.Sprint(ids); s != c.want {
			t.Errorf("%s: %s, want %s", c.name, s, c.want)
		}
	}
}
