package main

import (
	"regexp"
	"testing"
)

// TestInstanceShowForecast: beluga instance show prints an unfinished
// run's projected end, its critical path, the tasks with no history and
// each remaining task's projected span (a no-history task takes 1m).
func TestInstanceShowForecast(t *testing.T) {
	e := newEnv(t)
	e.want(0, []string{"project", "create", "p"}, "created")
	e.want(0, []string{"workflow", "apply", "-p", "p", "-f", e.file("w.yaml",
		"name: w\ntasks:\n  - {name: a, command: \"true\"}\n  - {name: b, command: \"true\", depends_on: [a]}\n")})
	out := e.want(0, []string{"workflow", "run", "-p", "p", "w"}, "submitted")
	id := regexp.MustCompile(`instance (\d+)`).FindStringSubmatch(out)[1]
	e.want(0, []string{"instance", "show", id}, "projected end", "(p90 ", "critical path", "a -> b",
		"no history", "a, b (counted 1m at p50, 2m at p90)")
	out = e.want(0, []string{"instance", "show", id}, "PROJECTED", "STARTS", "ENDS", "TAKES")
	rows := regexp.MustCompile(`(?m)^(a|b)\s+\S+ \S+\s+\S+ \S+\s+1m0s$`).FindAllString(out, -1)
	if len(rows) != 2 {
		t.Fatalf("want a projected span of 1m for a and for b:\n%s", out)
	}
}
