package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/beluga-scheduler/beluga/api"
)

func taskGroupCommand(a *app) *cobra.Command {
	var (
		capacity    int
		description string
	)
	create := &cobra.Command{
		Use:   "create NAME --capacity N",
		Short: "Create a task group: at most N of its tasks run at once, across all workflows",
		Args:  args("NAME"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if !cmd.Flags().Changed("capacity") {
				return usagef("--capacity N is required")
			}
			g, err := a.client().CreateTaskGroup(cmd.Context(), argv[0], capacity, description)
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(g)
			}
			_, err = fmt.Fprintf(a.stdout, "task group %s created (capacity %d)\n", g.Name, g.Capacity)
			return err
		},
	}
	create.Flags().IntVar(&capacity, "capacity", 0, "how many of the group's tasks may run at once")
	create.Flags().StringVar(&description, "description", "", "what the group limits")

	list := &cobra.Command{
		Use:   "list",
		Short: "List task groups with their use",
		Args:  args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			gs, err := a.client().ListTaskGroups(cmd.Context())
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(api.List[api.TaskGroup]{Items: gs})
			}
			t := newTable(a.stdout, "NAME", "CAPACITY", "IN USE", "CREATED", "DESCRIPTION")
			for _, g := range gs {
				t.row(g.Name, strconv.Itoa(g.Capacity), strconv.Itoa(g.InUse), when(&g.CreatedAt), g.Description)
			}
			return t.flush()
		},
	}

	resize := &cobra.Command{
		Use:   "resize NAME N",
		Short: "Change a task group's capacity (running tasks above a smaller one finish)",
		Args:  args("NAME", "N"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			n, err := strconv.Atoi(argv[1])
			if err != nil {
				return usagef("capacity must be a whole number, got %q", argv[1])
			}
			g, err := a.client().ResizeTaskGroup(cmd.Context(), argv[0], n)
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(g)
			}
			_, err = fmt.Fprintf(a.stdout, "task group %s: capacity %d (%d in use)\n", g.Name, g.Capacity, g.InUse)
			return err
		},
	}

	del := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a task group (refused while its tasks run)",
		Args:  args("NAME"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if err := a.client().DeleteTaskGroup(cmd.Context(), argv[0]); err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(map[string]any{"name": argv[0], "deleted": true})
			}
			_, err := fmt.Fprintf(a.stdout, "task group %s deleted\n", argv[0])
			return err
		},
	}
	return group("task-group", "Manage task groups (concurrency limits shared across workflows)", create, list, resize, del)
}
