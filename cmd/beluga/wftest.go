package main

import (
	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/internal/wftest"
)

// workflowTestCommand runs workflow tests (internal/wftest) on an embedded
// engine: no server, no login. Exit 0 all pass, 1 a case failed, 2 a bad
// test file or spec.
func workflowTestCommand(a *app) *cobra.Command {
	var junit string
	var verbose bool
	c := &cobra.Command{
		Use:   "test FILE...",
		Short: "Run workflow tests: a spec with its tasks mocked, checked against expectations",
		Long: "Run workflow tests. Each FILE is a test file (nightly.test.yaml beside nightly.yaml) whose\n" +
			"cases run the spec on an embedded engine (the real master, a mock worker, SQLite in a temp\n" +
			"dir) with the tasks' exit codes, outputs and durations mocked, and check which tasks ran or\n" +
			"were skipped, in what order, the branches taken, the params passed and the final state.\n" +
			"Exit 0: every case passed; 1: a case failed; 2: a bad test file or spec.",
		RunE: func(cmd *cobra.Command, files []string) error {
			if len(files) == 0 {
				return usagef("workflow test needs at least one test FILE")
			}
			rep := wftest.RunFiles(cmd.Context(), files, zap.NewNop())
			rep.WriteText(a.stdout, verbose)
			if junit != "" {
				if err := rep.WriteJUnitFile(junit); err != nil {
					return usagef("%v", err)
				}
			}
			if code := rep.ExitCode(); code != exitOK {
				return &exitError{code: code}
			}
			return nil
		},
	}
	c.Flags().StringVar(&junit, "junit", "", "also write the results as JUnit XML to `FILE` (one testcase per case)")
	c.Flags().BoolVarP(&verbose, "verbose", "v", false, "show every case's tasks, not only the failed cases'")
	return c
}
