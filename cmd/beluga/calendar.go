package main

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/api/client"
	"github.com/beluga-scheduler/beluga/common/model"
)

// calendarCommand is `beluga calendar set|import|show|list|delete`: shared
// calendars, or a project's with --project.
func calendarCommand(a *app) *cobra.Command {
	var project string
	g := group("calendar", "Manage business calendars (holidays, weekend, make-up workdays) that schedules follow",
		calendarSetCommand(a, &project), calendarImportCommand(a, &project), calendarShowCommand(a, &project),
		calendarListCommand(a, &project), calendarDeleteCommand(a, &project))
	g.PersistentFlags().StringVarP(&project, "project", "p", "", "the project's own calendars (left out: the shared ones, which admins write)")
	return g
}

// dayFlags reads DATE or DATE=NAME values.
func dayFlags(flag string, vals []string) ([]model.CalendarDay, error) {
	var out []model.CalendarDay
	for _, v := range vals {
		date, name, _ := strings.Cut(v, "=")
		if strings.TrimSpace(date) == "" {
			return nil, usagef("%s %q: want DATE or DATE=NAME, e.g. 2026-10-01=National Day", flag, v)
		}
		out = append(out, model.CalendarDay{Date: strings.TrimSpace(date), Name: name})
	}
	return out, nil
}

// weekendFlag reads --weekend: comma-separated days, "none" for none.
func weekendFlag(s string) []string {
	if s == "" || s == "none" {
		return []string{}
	}
	return strings.Split(s, ",")
}

func calendarSetCommand(a *app, project *string) *cobra.Command {
	var (
		file, weekend, description string
		holidays, workdays         []string
	)
	c := &cobra.Command{
		Use:   "set NAME [-f FILE | --holiday DATE[=NAME]... --workday DATE[=NAME]... --weekend sat,sun]",
		Short: "Create or replace a business calendar",
		Long: "Create or replace business calendar NAME (shared; a project's with --project). set replaces\n" +
			"all of it: from a YAML or JSON file (-f; - for stdin) with description, weekend, holidays and\n" +
			"workdays, or from the flags. --weekend takes days (mon..sun) comma-separated, none for no\n" +
			"weekend; default sat,sun. --workday adds an extra working day, such as a make-up workday on a\n" +
			"weekend. Dates are YYYY-MM-DD.",
		Args: args("NAME"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			var req client.CalendarRequest
			if file != "" {
				if len(holidays)+len(workdays) > 0 || cmd.Flags().Changed("weekend") || description != "" {
					return usagef("give -f or the day flags, not both")
				}
				data, err := readSpec(a.stdin, file)
				if err != nil {
					return err
				}
				dec := yaml.NewDecoder(bytes.NewReader(data)) // YAML reads JSON too
				dec.KnownFields(true)
				if err := dec.Decode(&req); err != nil {
					msg := strings.Join(strings.Fields(strings.ReplaceAll(err.Error(), "\n", "; ")), " ") // one line
					return usagef("calendar file %s: %s", file, strings.ReplaceAll(msg, ":;", ":"))
				}
			} else {
				var err error
				if req.Holidays, err = dayFlags("--holiday", holidays); err != nil {
					return err
				}
				if req.Workdays, err = dayFlags("--workday", workdays); err != nil {
					return err
				}
				if cmd.Flags().Changed("weekend") {
					req.Weekend = weekendFlag(weekend)
				}
				req.Description = description
			}
			cal, err := a.client().PutCalendar(cmd.Context(), *project, argv[0], req)
			if err != nil {
				return err
			}
			return printCalendarSaved(a, cal, "set")
		},
	}
	f := c.Flags()
	f.StringVarP(&file, "file", "f", "", "YAML or JSON file of the calendar (- for stdin)")
	f.StringArrayVar(&holidays, "holiday", nil, "a day off, DATE or DATE=NAME (repeatable)")
	f.StringArrayVar(&workdays, "workday", nil, "an extra working day, DATE or DATE=NAME (repeatable)")
	f.StringVar(&weekend, "weekend", "", "weekend days, e.g. sat,sun (the default) or fri,sat; none for no weekend")
	f.StringVar(&description, "description", "", "what the calendar is for")
	return c
}

// printCalendarSaved tells what a set or an import left in the calendar.
func printCalendarSaved(a *app, cal client.Calendar, verb string) error {
	if a.json() {
		return a.printJSON(cal)
	}
	_, err := fmt.Fprintf(a.stdout, "calendar %s %s (%d holidays, %d workdays, weekend %s)\n", calendarName(cal), verb,
		len(cal.Holidays), len(cal.Workdays), orNone(strings.Join(cal.Weekend, ",")))
	return err
}

func calendarImportCommand(a *app, project *string) *cobra.Command {
	var (
		format, weekend string
		workdays        bool
	)
	c := &cobra.Command{
		Use:   "import NAME FILE [--format ics|csv] [--workdays] [--weekend sat,sun]",
		Short: "Import a calendar's holidays (or make-up workdays) from an ICS or CSV file",
		Long: "Read the dates of FILE (- for stdin) into calendar NAME, creating it if need be: the dates of\n" +
			"each VEVENT of an ICS file (all-day and multi-day events; RRULE is refused), or a CSV file of\n" +
			"one date per line with an optional name column. They replace the holidays, or with --workdays\n" +
			"the extra working days; the rest of the calendar stays. The format follows the file's\n" +
			"extension (.ics, .csv) unless --format says it.",
		Args: args("NAME", "FILE"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if format == "" {
				switch strings.ToLower(filepath.Ext(argv[1])) {
				case ".ics", ".ical", ".ifb", ".icalendar":
					format = "ics"
				case ".csv":
					format = "csv"
				default:
					return usagef("say --format ics or --format csv: %s has neither extension", argv[1])
				}
			}
			if format != "ics" && format != "csv" {
				return usagef("--format %q: use ics or csv", format)
			}
			data, err := readSpec(a.stdin, argv[1])
			if err != nil {
				return err
			}
			var ws *[]string
			if cmd.Flags().Changed("weekend") {
				w := weekendFlag(weekend)
				ws = &w
			}
			cal, err := a.client().ImportCalendar(cmd.Context(), *project, argv[0], format, data, workdays, ws)
			if err != nil {
				return err
			}
			return printCalendarSaved(a, cal, "imported")
		},
	}
	f := c.Flags()
	f.StringVar(&format, "format", "", "ics or csv (default: from the file's extension)")
	f.BoolVar(&workdays, "workdays", false, "the file lists extra working days, not holidays")
	f.StringVar(&weekend, "weekend", "", "also set the weekend days, e.g. sat,sun; none for no weekend")
	return c
}

func calendarShowCommand(a *app, project *string) *cobra.Command {
	return &cobra.Command{
		Use:   "show NAME",
		Short: "Show a calendar and its days",
		Args:  args("NAME"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			cal, err := a.client().GetCalendar(cmd.Context(), *project, argv[0])
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(cal)
			}
			kv := newTable(a.stdout, "CALENDAR", calendarName(cal))
			kv.row("description", cal.Description)
			kv.row("weekend", orNone(strings.Join(cal.Weekend, ",")))
			kv.row("version", strconv.FormatInt(cal.Version, 10))
			kv.row("updated", when(&cal.UpdatedAt)+" by "+cal.UpdatedBy)
			if err := kv.flush(); err != nil {
				return err
			}
			fmt.Fprintln(a.stdout)
			t := newTable(a.stdout, "DATE", "KIND", "NAME")
			for _, d := range cal.Holidays {
				t.row(d.Date, "holiday", d.Name)
			}
			for _, d := range cal.Workdays {
				t.row(d.Date, "workday", d.Name)
			}
			return t.flush()
		},
	}
}

func calendarListCommand(a *app, project *string) *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the shared calendars, or a project's with --project",
		Args:  args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cals, err := a.client().ListCalendars(cmd.Context(), *project)
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(api.List[api.Calendar]{Items: cals})
			}
			t := newTable(a.stdout, "NAME", "WEEKEND", "HOLIDAYS", "WORKDAYS", "DESCRIPTION")
			for _, c := range cals {
				t.row(calendarName(c), orNone(strings.Join(c.Weekend, ",")), strconv.Itoa(len(c.Holidays)), strconv.Itoa(len(c.Workdays)), c.Description)
			}
			return t.flush()
		},
	}
}

func calendarDeleteCommand(a *app, project *string) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a calendar (refused while a schedule uses it)",
		Args:  args("NAME"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if err := a.client().DeleteCalendar(cmd.Context(), *project, argv[0]); err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(map[string]any{"project": *project, "name": argv[0], "deleted": true})
			}
			_, err := fmt.Fprintf(a.stdout, "calendar %s deleted\n", calendarName(api.Calendar{Project: *project, Name: argv[0]}))
			return err
		},
	}
}

// calendarName is project/name for a project's calendar, name for a shared one.
func calendarName(c api.Calendar) string {
	if c.Project == "" {
		return c.Name
	}
	return c.Project + "/" + c.Name
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
