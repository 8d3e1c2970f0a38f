package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/beluga-scheduler/beluga/api"
)

func projectCommand(a *app) *cobra.Command {
	var description string
	create := &cobra.Command{
		Use:   "create NAME",
		Short: "Create a project",
		Args:  args("NAME"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			p, err := a.client().CreateProject(cmd.Context(), argv[0], description)
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(p)
			}
			_, err = fmt.Fprintf(a.stdout, "project %s created\n", p.Name)
			return err
		},
	}
	create.Flags().StringVar(&description, "description", "", "what the project is for")

	list := &cobra.Command{
		Use:   "list",
		Short: "List projects",
		Args:  args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ps, err := a.client().ListProjects(cmd.Context())
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(api.List[api.Project]{Items: ps})
			}
			t := newTable(a.stdout, "NAME", "CREATED", "DESCRIPTION")
			for _, p := range ps {
				t.row(p.Name, when(&p.CreatedAt), p.Description)
			}
			return t.flush()
		},
	}

	get := &cobra.Command{
		Use:   "get NAME",
		Short: "Show a project",
		Args:  args("NAME"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			p, err := a.client().GetProject(cmd.Context(), argv[0])
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(p)
			}
			t := newTable(a.stdout, "NAME", "CREATED", "DESCRIPTION")
			t.row(p.Name, when(&p.CreatedAt), p.Description)
			return t.flush()
		},
	}
	return group("project", "Manage projects", create, list, get)
}
