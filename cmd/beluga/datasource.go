package main

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/api/client"
)

func datasourceCommand(a *app) *cobra.Command {
	var (
		spec       client.DatasourceSpec
		params     []string
		password   passwordFlags
		projects   []string
		noProjects bool
	)
	set := &cobra.Command{
		Use:   "set NAME --type mysql|postgres|sqlite [--host H --port P --database D --user U] [--password-stdin | --password-file F | --no-password] [--param k=v]... [--project P]... [--no-projects]",
		Short: "Create or replace a datasource (the password is kept when none is given)",
		Args:  args("NAME"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			pw, err := password.read(a.stdin)
			if err != nil {
				return err
			}
			spec.Password = pw
			for _, p := range params {
				k, v, ok := strings.Cut(p, "=")
				if !ok || k == "" {
					return usagef("--param %q: want key=value", p)
				}
				if spec.Params == nil {
					spec.Params = map[string]string{}
				}
				spec.Params[k] = v
			}
			switch {
			case noProjects && len(projects) > 0:
				return usagef("give --project or --no-projects, not both")
			case noProjects:
				spec.Projects = &[]string{}
			case len(projects) > 0:
				spec.Projects = &projects
			}
			d, err := a.client().PutDatasource(cmd.Context(), argv[0], spec)
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(d)
			}
			_, err = fmt.Fprintf(a.stdout, "datasource %s set (%s, password %s)\n", d.Name, d.Type, map[bool]string{true: "set", false: "none"}[d.PasswordSet])
			return err
		},
	}
	f := set.Flags()
	f.StringVar(&spec.Type, "type", "", "mysql, postgres or sqlite")
	f.StringVar(&spec.Host, "host", "", "server host (mysql, postgres)")
	f.IntVar(&spec.Port, "port", 0, "server port (default 3306 or 5432)")
	f.StringVar(&spec.Database, "database", "", "database name; for sqlite the absolute path of the file")
	f.StringVar(&spec.User, "user", "", "user name (mysql, postgres)")
	password.add(f, "password")
	f.StringArrayVar(&params, "param", nil, "driver parameter key=value (repeatable), e.g. sslmode=require, tls=true")
	f.StringArrayVar(&projects, "project", nil, "grant it to this project (repeatable; replaces the granted projects; left out: kept)")
	f.BoolVar(&noProjects, "no-projects", false, "withdraw it from every project (admins' workflows only)")

	list := &cobra.Command{
		Use:   "list",
		Short: "List datasources",
		Args:  args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ds, err := a.client().ListDatasources(cmd.Context())
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(api.List[api.Datasource]{Items: ds})
			}
			t := newTable(a.stdout, "NAME", "TYPE", "ADDRESS", "DATABASE", "USER", "PASSWORD", "USED BY")
			for _, d := range ds {
				t.row(d.Name, d.Type, address(d), d.Database, d.User, map[bool]string{true: "set", false: ""}[d.PasswordSet],
					strings.Join(d.UsedBy, ","))
			}
			return t.flush()
		},
	}

	show := &cobra.Command{
		Use:   "show NAME",
		Short: "Show a datasource (never its password)",
		Args:  args("NAME"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			d, err := a.client().GetDatasource(cmd.Context(), argv[0])
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(d)
			}
			t := newTable(a.stdout, "FIELD", "VALUE")
			t.row("name", d.Name)
			t.row("type", d.Type)
			t.row("address", address(d))
			t.row("database", d.Database)
			t.row("user", d.User)
			t.row("password", map[bool]string{true: "set", false: "none"}[d.PasswordSet])
			keys := make([]string, 0, len(d.Params))
			for k := range d.Params {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				t.row("param "+k, d.Params[k])
			}
			t.row("projects", strings.Join(d.Projects, ", "))
			t.row("used by", strings.Join(d.UsedBy, ", "))
			t.row("updated", when(&d.UpdatedAt))
			return t.flush()
		},
	}

	test := &cobra.Command{
		Use:   "test NAME",
		Short: "Connect to a datasource from the API server (exit 1 when it fails)",
		Args:  args("NAME"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			r, err := a.client().TestDatasource(cmd.Context(), argv[0])
			if err != nil {
				return err
			}
			if a.json() {
				if err := a.printJSON(r); err != nil {
					return err
				}
			} else if r.OK {
				fmt.Fprintf(a.stdout, "datasource %s: ok (%d ms)\n", argv[0], r.ElapsedMs)
			}
			if !r.OK {
				return &exitError{code: exitFailed, msg: fmt.Sprintf("datasource %s: %s", argv[0], r.Error)}
			}
			return nil
		},
	}

	del := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a datasource (refused while a workflow's latest version uses it)",
		Args:  args("NAME"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if err := a.client().DeleteDatasource(cmd.Context(), argv[0]); err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(map[string]any{"name": argv[0], "deleted": true})
			}
			_, err := fmt.Fprintf(a.stdout, "datasource %s deleted\n", argv[0])
			return err
		},
	}
	return group("datasource", "Manage datasources (connection details of sql tasks; passwords encrypted at rest)", set, list, show, test, del)
}

func address(d api.Datasource) string {
	if d.Host == "" {
		return ""
	}
	if d.Port == 0 {
		return d.Host
	}
	return d.Host + ":" + strconv.Itoa(d.Port)
}
