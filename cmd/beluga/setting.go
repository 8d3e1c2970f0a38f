package main

import (
	"fmt"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/beluga-scheduler/beluga/api"
)

// settingCommand is `beluga setting list|set`: the quotas and the leader's
// admission limits (README, Quotas and Admission).
func settingCommand(a *app) *cobra.Command {
	list := &cobra.Command{
		Use:   "list",
		Short: "List the server-wide settings (admins), then whether the leading master admits new runs",
		Args:  args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			ss, err := a.client().Settings(cmd.Context())
			if err != nil {
				return err
			}
			h, err := a.client().Healthz(cmd.Context())
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(map[string]any{"settings": ss, "admission": h.Admission})
			}
			t := newTable(a.stdout, "NAME", "VALUE", "DEFAULT", "MIN", "MAX")
			for _, s := range ss {
				t.row(s.Name, itoa(s.Value), itoa(s.Default), itoa(s.Min), itoa(s.Max))
			}
			if err := t.flush(); err != nil {
				return err
			}
			_, err = fmt.Fprintln(a.stdout, admissionLine(h.Admission))
			return err
		},
	}
	set := &cobra.Command{
		Use:   "set NAME VALUE",
		Short: "Change a setting (admins); a master reads its admission limits within a second",
		Args:  args("NAME", "VALUE"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			v, err := strconv.ParseInt(argv[1], 10, 64)
			if err != nil {
				return usagef("VALUE must be a whole number, got %q", argv[1])
			}
			s, err := a.client().SetSetting(cmd.Context(), argv[0], v)
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(s)
			}
			_, err = fmt.Fprintf(a.stdout, "%s = %d\n", s.Name, s.Value)
			return err
		},
	}
	return group("setting", "Server-wide settings: quotas and the master's admission limits", list, set)
}

func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// admissionLine says whether the leading master admits new runs.
func admissionLine(a *api.Admission) string {
	switch {
	case a == nil:
		return "admission: unknown (the server does not say)"
	case a.Saturated:
		return fmt.Sprintf("admission: saturated since %s: %s", when(a.Since), a.Reason)
	}
	return "admission: admitting new runs"
}
