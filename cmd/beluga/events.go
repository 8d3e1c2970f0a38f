package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/beluga-scheduler/beluga/api"
)

// readSecretFile reads a secret from a file (never a flag value: ps would
// show it); "" leaves the stored secret alone.
func readSecretFile(path string) (*string, error) {
	if path == "" {
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, usagef("--secret-file: %v", err)
	}
	s := strings.TrimRight(string(b), "\r\n")
	return &s, nil
}

func subscriptionCommand(a *app) *cobra.Command {
	var req api.SubscriptionRequest
	var secretFile string
	put := &cobra.Command{
		Use:   "put NAME --url URL [--project P] [--workflow W] [--instance ID] [--secret-file F]",
		Short: "Create or replace a webhook subscription to the event stream",
		Args:  args("NAME"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			var err error
			if req.Secret, err = readSecretFile(secretFile); err != nil {
				return err
			}
			s, err := a.client().PutSubscription(cmd.Context(), argv[0], req)
			if err != nil {
				return err
			}
			return a.printJSON(s)
		},
	}
	f := put.Flags()
	f.StringVar(&req.URL, "url", "", "where the events are POSTed")
	f.StringVar(&req.Project, "project", "", "only events of this project")
	f.StringVar(&req.Workflow, "workflow", "", "only events of this workflow")
	f.Int64Var(&req.InstanceID, "instance", 0, "only events of this instance")
	f.StringVar(&secretFile, "secret-file", "", "file holding the HMAC signing secret")
	list := &cobra.Command{Use: "list", Short: "List webhook subscriptions", Args: args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := a.client().ListSubscriptions(cmd.Context())
			if err != nil {
				return err
			}
			return a.printJSON(l)
		}}
	del := &cobra.Command{Use: "delete NAME", Short: "Delete a webhook subscription", Args: args("NAME"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if err := a.client().DeleteSubscription(cmd.Context(), argv[0]); err != nil {
				return err
			}
			_, err := fmt.Fprintf(a.stdout, "subscription %s deleted\n", argv[0])
			return err
		}}
	var limit int
	deliveries := &cobra.Command{Use: "deliveries NAME [--limit N]", Short: "Show a subscription's delivery log, newest first", Args: args("NAME"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			l, err := a.client().Deliveries(cmd.Context(), argv[0], limit)
			if err != nil {
				return err
			}
			return a.printJSON(l)
		}}
	deliveries.Flags().IntVar(&limit, "limit", 50, "entries to show (at most 1000)")
	return group("subscription", "Webhook subscriptions to the event stream", put, list, del, deliveries)
}

func alertChannelCommand(a *app) *cobra.Command {
	var req api.AlertChannelRequest
	var secretFile string
	put := &cobra.Command{
		Use:   "put NAME --kind webhook|email|script [settings] [--secret-file F]",
		Short: "Create or replace an alert channel",
		Args:  args("NAME"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			var err error
			if req.Secret, err = readSecretFile(secretFile); err != nil {
				return err
			}
			ch, err := a.client().PutAlertChannel(cmd.Context(), argv[0], req)
			if err != nil {
				return err
			}
			return a.printJSON(ch)
		},
	}
	f := put.Flags()
	f.StringVar(&req.Kind, "kind", "", "webhook, email or script")
	f.StringVar(&req.URL, "url", "", "webhook: the URL")
	f.StringVar(&req.Format, "format", "", "webhook: json (default), slack or teams")
	f.StringVar(&req.Host, "host", "", "email: SMTP host")
	f.IntVar(&req.Port, "port", 0, "email: SMTP port (default 587, 465 with --tls tls)")
	f.StringVar(&req.TLS, "tls", "", "email: starttls (default), tls or none")
	f.StringVar(&req.Username, "username", "", "email: SMTP user (the password is the secret)")
	f.StringVar(&req.From, "from", "", "email: sender address")
	f.StringSliceVar(&req.To, "to", nil, "email: recipient addresses")
	f.StringVar(&req.Command, "command", "", "script: command run on the master's host")
	f.StringVar(&secretFile, "secret-file", "", "file holding the SMTP password or webhook signing key")
	list := &cobra.Command{Use: "list", Short: "List alert channels", Args: args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := a.client().ListAlertChannels(cmd.Context())
			if err != nil {
				return err
			}
			return a.printJSON(l)
		}}
	del := &cobra.Command{Use: "delete NAME", Short: "Delete an alert channel", Args: args("NAME"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			if err := a.client().DeleteAlertChannel(cmd.Context(), argv[0]); err != nil {
				return err
			}
			_, err := fmt.Fprintf(a.stdout, "alert channel %s deleted\n", argv[0])
			return err
		}}
	test := &cobra.Command{Use: "test NAME", Short: "Send a test alert through a channel and show the outcome", Args: args("NAME"),
		RunE: func(cmd *cobra.Command, argv []string) error {
			al, err := a.client().TestAlertChannel(cmd.Context(), argv[0])
			if err != nil {
				return err
			}
			return a.printJSON(al)
		}}
	return group("alert-channel", "Alert channels (webhook, email, script)", put, list, del, test)
}

func alertCommand(a *app) *cobra.Command {
	var (
		instance int64
		channel  string
		limit    int
	)
	list := &cobra.Command{Use: "list [--instance ID] [--channel C]", Short: "Show sent and pending alerts, newest first", Args: args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			l, err := a.client().Alerts(cmd.Context(), instance, channel, limit)
			if err != nil {
				return err
			}
			return a.printJSON(l)
		}}
	list.Flags().Int64Var(&instance, "instance", 0, "only alerts of this instance")
	list.Flags().StringVar(&channel, "channel", "", "only alerts through this channel")
	list.Flags().IntVar(&limit, "limit", 50, "alerts to show (at most 1000)")
	return group("alert", "Alert history", list)
}
