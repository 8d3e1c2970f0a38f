package main

import (
	"context"
	"fmt"
	"os"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/api/client"
)

// defaultBy names the operator in the history of an action: BELUGA_USER,
// else the login name; "" lets the server record "api".
func defaultBy() string {
	if u := os.Getenv("BELUGA_USER"); u != "" {
		return u
	}
	return os.Getenv("USER")
}

// actionVerb is one action subcommand: its CLI name, the API's action and
// help; versioned ones (rerun, recover-failed) take --latest and --version.
type actionVerb struct {
	use, action, short string
	versioned          bool
}

// instanceActionCommands are `beluga instance stop|pause|resume|rerun|recover-failed ID`.
func instanceActionCommands(a *app) []*cobra.Command {
	cmds := actionCommands(a, "instance ID", (*client.Client).InstanceAction, []actionVerb{
		{"stop", "stop", "Stop an instance: kill its running tasks and start nothing new", false},
		{"pause", "pause", "Pause an instance: let running tasks finish and start nothing new", false},
		{"resume", "resume", "Resume a paused or stopped instance in place", false},
		{"rerun", "rerun", "Run a finished instance again in place (same id, new attempts), its own version unless --latest or --version", true},
		{"recover-failed", "recover_failed", "Rerun only the failed and killed tasks of an instance and their downstream, its own version unless --latest or --version", true},
	})
	// The actions that start work have a plan form (plan.go).
	withPlan(a, cmds[3], "rerun")
	withPlan(a, cmds[4], "recover_failed")
	return cmds
}

// taskActionCommands are `beluga task kill|force-success|force-start ID`.
func taskActionCommands(a *app) []*cobra.Command {
	return actionCommands(a, "task instance ID", (*client.Client).TaskAction, []actionVerb{
		{"kill", "kill", "Kill a task instance", false},
		{"force-success", "force_success", "Make a failed or killed task count as succeeded, so its downstream may run", false},
		{"force-start", "force_start", "Let a task waiting for a full task group start once without a slot", false},
	})
}

// actionCommands makes one subcommand per verb that sends its action with
// do (the client's instance or task action call).
func actionCommands(a *app, what string, do func(*client.Client, context.Context, int64, string, string) (api.ActionAccepted, error),
	verbs []actionVerb) []*cobra.Command {
	out := make([]*cobra.Command, 0, len(verbs))
	for _, v := range verbs {
		var version func() (api.VersionChoice, error)
		c := actionCommand(a, v.use, v.short, what, func(cmd *cobra.Command, id int64, by string) (api.ActionAccepted, error) {
			if version == nil {
				return do(a.client(), cmd.Context(), id, v.action, by)
			}
			choice, err := version()
			if err != nil {
				return api.ActionAccepted{}, err
			}
			return a.client().RestartInstance(cmd.Context(), id, v.action, by, choice)
		})
		if v.versioned {
			version = versionFlags(c)
		}
		out = append(out, c)
	}
	return out
}

func actionCommand(a *app, use, short, what string, send func(*cobra.Command, int64, string) (api.ActionAccepted, error)) *cobra.Command {
	var by string
	c := &cobra.Command{
		Use:   use + " ID",
		Short: short,
		Long: short + ".\nThe request is queued for the active master, which acts on it shortly;\n" +
			"'beluga instance show' lists it under HISTORY. A state that does not allow it exits 1.",
		Args: args("ID"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			id, err := parseID(what, argv[0])
			if err != nil {
				return err
			}
			acc, err := send(cmd, id, by)
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(acc)
			}
			subject := "instance " + strconv.FormatInt(acc.InstanceID, 10)
			if acc.TaskInstanceID != nil {
				subject = fmt.Sprintf("task instance %d (instance %d)", *acc.TaskInstanceID, acc.InstanceID)
			}
			_, err = fmt.Fprintf(a.stdout, "%s: %s requested (command %d); instance state %s\n", subject, acc.Action, acc.CommandID, acc.State)
			return err
		},
	}
	c.Flags().StringVar(&by, "by", defaultBy(), "no longer used: the history names the logged-in user (kept for old scripts)")
	return c
}
