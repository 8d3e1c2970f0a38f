package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/beluga-scheduler/beluga/api"
)

// datasetCommand is `beluga dataset`: a project's datasets, who produces
// and consumes them, their partitions, and events from outside (README,
// "Data-aware scheduling").
func datasetCommand(a *app) *cobra.Command {
	var project string
	list := &cobra.Command{
		Use:   "list",
		Short: "List the project's datasets: producers, consumers, partitions produced",
		Args:  args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := needProject(&project)()
			if err != nil {
				return err
			}
			ds, err := a.client().ListDatasets(cmd.Context(), p)
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(ds)
			}
			t := newTable(a.stdout, "DATASET", "PRODUCERS", "CONSUMERS", "PARTITIONS", "LAST")
			for _, d := range ds {
				t.row(d.Name, producersText(d.Producers), consumersText(d.Consumers), fmt.Sprint(d.Partitions), d.LastPartition)
			}
			return t.flush()
		},
	}

	var limit int
	show := &cobra.Command{
		Use:   "show DATASET [--limit N]",
		Short: "Show a dataset: who produces and consumes it, and its newest partitions with their events",
		Args:  args("DATASET"),
		RunE: func(cmd *cobra.Command, as []string) error {
			p, err := needProject(&project)()
			if err != nil {
				return err
			}
			if limit < 1 || limit > 1000 {
				return usagef("--limit must be 1 to 1000, got %d", limit)
			}
			d, err := a.client().GetDataset(cmd.Context(), p, as[0], limit)
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(d)
			}
			fmt.Fprintf(a.stdout, "dataset:    %s\nproducers:  %s\nconsumers:  %s\npartitions: %d\n\n",
				d.Name, producersText(d.Producers), consumersText(d.Consumers), d.Partitions)
			t := newTable(a.stdout, "PARTITION", "EVENTS", "PRODUCED BY", "LAST AT")
			for _, pt := range d.PartitionList {
				var by []string
				var last time.Time
				for _, e := range pt.Events {
					by = append(by, eventProducer(e))
					if e.ProducedAt.After(last) {
						last = e.ProducedAt
					}
				}
				t.row(pt.Key, fmt.Sprint(len(pt.Events)), strings.Join(by, " "), when(&api.Time{Time: last}))
			}
			return t.flush()
		},
	}
	show.Flags().IntVar(&limit, "limit", 50, "the newest partitions to show (1 to 1000)")

	var key string
	var asPlan bool
	emit := &cobra.Command{
		Use:   "emit DATASET PARTITION [--key K] [--plan]",
		Short: "Record a partition produced outside Beluga (operate): its consumers run once every input is produced",
		Long: "Record DATASET's PARTITION (a day, 2026-12-07, or an hour, 2026-12-07T13) as produced. The leader\n" +
			"starts each workflow scheduled on the dataset whose partition is then complete; a partition emitted\n" +
			"again after that run reruns it under late_data: rerun. --key makes a retried emit record one event.\n" +
			"--plan records nothing: it shows which workflows the event would run (and why the others would not)\n" +
			"as a plan, which beluga plan apply ID then posts, or refuses if a decision changed.",
		Args: args("DATASET", "PARTITION"),
		RunE: func(cmd *cobra.Command, as []string) error {
			p, err := needProject(&project)()
			if err != nil {
				return err
			}
			if asPlan {
				pl, err := a.client().DatasetEventPlan(cmd.Context(), p, as[0], as[1], key)
				if err != nil {
					return err
				}
				if a.json() {
					return a.printJSON(pl)
				}
				return printPlan(a.stdout, pl)
			}
			r, err := a.client().EmitDataset(cmd.Context(), p, as[0], as[1], key)
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(r)
			}
			verb := "recorded"
			if r.Duplicate {
				verb = "already recorded with this key"
			}
			_, err = fmt.Fprintf(a.stdout, "%s@%s %s (event %d)\n", r.Event.Dataset, r.Event.Partition, verb, r.Event.ID)
			return err
		},
	}
	emit.Flags().StringVar(&key, "key", "", "Idempotency-Key: an emit with a key already recorded for the partition records nothing")
	emit.Flags().BoolVar(&asPlan, "plan", false, "plan the event instead: what it would run; apply with beluga plan apply ID")

	var workflow string
	var fireLimit int
	fires := &cobra.Command{
		Use:   "fires --workflow W [--limit N]",
		Short: "The ledger of a workflow scheduled on datasets: each partition's run, rerun or ignored re-produce",
		Args:  args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			p, err := needProject(&project)()
			if err != nil {
				return err
			}
			if workflow == "" {
				return usagef("--workflow is required")
			}
			if fireLimit < 1 || fireLimit > 1000 {
				return usagef("--limit must be 1 to 1000, got %d", fireLimit)
			}
			fs, err := a.client().DatasetFires(cmd.Context(), p, workflow, fireLimit)
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(fs)
			}
			t := newTable(a.stdout, "ID", "PARTITION", "OUTCOME", "RUN", "EVENT", "AT", "REASON")
			for _, f := range fs {
				run := ""
				if f.RunID != 0 {
					run = fmt.Sprint(f.RunID)
				}
				t.row(fmt.Sprint(f.ID), f.Partition, f.Outcome, run, fmt.Sprint(f.EventID), when(&api.Time{Time: f.FiredAt}), f.Reason)
			}
			return t.flush()
		},
	}
	fires.Flags().StringVarP(&workflow, "workflow", "w", "", "the consuming workflow")
	fires.Flags().IntVar(&fireLimit, "limit", 50, "at most this many (1 to 1000)")

	g := group("dataset", "A project's datasets: list, show, emit, fires", list, show, emit, fires)
	g.PersistentFlags().StringVarP(&project, "project", "p", os.Getenv("BELUGA_PROJECT"), "project (env BELUGA_PROJECT)")
	return g
}

func eventProducer(e api.DatasetEvent) string {
	if e.ProducedBy != "" {
		return e.ProducedBy
	}
	if e.RunID != 0 {
		return fmt.Sprintf("run %d", e.RunID)
	}
	return e.Producer
}

func producersText(ps []api.DatasetProducer) string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Workflow + "/" + p.Task
	}
	return strings.Join(out, ",")
}

func consumersText(cs []api.DatasetConsumer) string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Workflow + "(" + c.Grain + "," + c.LateData + ")"
	}
	return strings.Join(out, ",")
}
