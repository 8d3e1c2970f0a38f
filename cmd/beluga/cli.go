package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/beluga-scheduler/beluga/api/client"
)

// Exit codes.
const (
	exitOK          = 0
	exitFailed      = 1 // the server refused for an operational reason, or the run failed
	exitUsage       = 2 // bad usage or bad input (including a spec the server rejected)
	exitUnreachable = 3 // the server could not be reached
)

const defaultServer = "http://127.0.0.1:12345"

// app holds what every CLI verb shares: the global flags and the streams.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	server         string
	output         string
	httpClient     *http.Client // nil: client's default
	serverCA       string       // --server-ca: the CA of an https --server
	getenv         func(string) string
}

// client is the API client of every verb, authenticated with a.token().
func (a *app) client() *client.Client { return a.bareClient().WithToken(a.token()) }

// bareClient sends no token (login).
func (a *app) bareClient() *client.Client {
	if a.httpClient == nil && a.serverCA != "" {
		a.httpClient = caClient(a.serverCA)
	}
	return client.NewClient(a.server, a.httpClient)
}

// caClient trusts the CA in file for HTTPS. A file that cannot be read
// makes every request fail with an error naming it.
func caClient(file string) *http.Client {
	pool := x509.NewCertPool()
	b, err := os.ReadFile(file)
	if err == nil && !pool.AppendCertsFromPEM(b) {
		err = fmt.Errorf("no PEM certificate in %s", file)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if err != nil {
		err = fmt.Errorf("--server-ca: %w", err)
		tr.DialTLSContext = func(context.Context, string, string) (net.Conn, error) { return nil, err }
	}
	return &http.Client{Transport: tr}
}

func (a *app) json() bool { return a.output == "json" }

// usagef makes a usageError (server.go): bad usage or bad input detected
// before or instead of a request, exit 2.
func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// exitError ends a command with a code; an empty msg prints nothing more.
type exitError struct {
	code int
	msg  string
}

func (e *exitError) Error() string { return e.msg }

// execute builds the command tree, runs args and maps the outcome to an exit
// code, printing any error as one line on stderr.
func execute(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return executeEnv(ctx, args, os.Getenv, stdin, stdout, stderr)
}

// executeEnv is execute with getenv for the variables of the token
// (BELUGA_TOKEN, the config dir).
func executeEnv(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	a := &app{stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv}
	root := newRoot(a)
	// started records whether a command's own code ran: an error from
	// before that (unknown command or flag, wrong arguments) is bad usage,
	// whatever cobra's untyped error says.
	started := false
	markStarted(root, &started)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	code := exitCode(err, started)
	msg := message(err)
	var ue usageError
	if (errors.As(err, &ue) || !started) && msg != "" && cmd != nil {
		msg += " (see '" + cmd.CommandPath() + " --help')"
	}
	if msg != "" {
		fmt.Fprintln(stderr, "beluga: "+msg)
	}
	return code
}

func exitCode(err error, started bool) int {
	var ue usageError
	var ee *exitError
	var ae *client.APIError
	switch {
	case errors.As(err, &ee):
		return ee.code
	case errors.As(err, &ue), errors.Is(err, client.ErrInvalidSpec):
		return exitUsage
	case errors.As(err, &ae):
		switch ae.Status {
		case http.StatusBadRequest, http.StatusRequestEntityTooLarge, http.StatusUnsupportedMediaType:
			return exitUsage
		}
		return exitFailed
	case errors.Is(err, client.ErrUnreachable):
		return exitUnreachable
	case !started:
		return exitUsage
	}
	return exitFailed
}

func message(err error) string {
	var ae *client.APIError
	switch {
	case errors.As(err, &ae):
		return ae.Message
	case errors.Is(err, context.Canceled):
		return "interrupted"
	}
	return err.Error()
}

// markStarted wraps every runnable command so *started is set when its own
// code begins, after cobra has parsed flags and checked arguments.
func markStarted(c *cobra.Command, started *bool) {
	if f := c.RunE; f != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error { *started = true; return f(cmd, args) }
	} else if f := c.Run; f != nil {
		c.Run = func(cmd *cobra.Command, args []string) { *started = true; f(cmd, args) }
	}
	for _, sub := range c.Commands() {
		markStarted(sub, started)
	}
}

func newRoot(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:           "beluga",
		Short:         "Beluga, a DAG workflow scheduler",
		SilenceErrors: true,
		SilenceUsage:  true,
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			if a.output != "table" && a.output != "json" {
				return usagef("-o %q: use table or json", a.output)
			}
			return nil
		},
	}
	server := os.Getenv("BELUGA_SERVER")
	if server == "" {
		server = defaultServer
	}
	root.PersistentFlags().StringVar(&a.server, "server", server, "URL of the Beluga API (env BELUGA_SERVER)")
	serverCA := os.Getenv("BELUGA_SERVER_CA")
	if serverCA == "" {
		serverCA = os.Getenv("BELUGA_TLS_CA_FILE")
	}
	root.PersistentFlags().StringVar(&a.serverCA, "server-ca", serverCA,
		"PEM CA that an https --server's certificate chains to (env BELUGA_SERVER_CA, else BELUGA_TLS_CA_FILE)")
	root.PersistentFlags().StringVarP(&a.output, "output", "o", "table", "output format: table or json")
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(projectCommand(a), workflowCommand(a), scheduleCommand(a), backfillCommand(a), instanceCommand(a), planCommand(a), taskCommand(a), taskGroupCommand(a), calendarCommand(a), datasourceCommand(a), retentionCommand(a), gitCommand(a), promoteCommand(a), promotionCommand(a), triggerCommand(a), datasetCommand(a), clusterCommand(a), settingCommand(a))
	root.AddCommand(loginCommand(a), logoutCommand(a), whoamiCommand(a), auditCommand(a))
	root.AddCommand(subscriptionCommand(a), alertChannelCommand(a), alertCommand(a))
	root.AddCommand(serverCommands()...)
	root.AddCommand(versionCommand(a))
	return root
}

// group makes a parent command that answers an unknown subcommand with a
// usage error (cobra would print help and exit 0).
func group(use, short string, subs ...*cobra.Command) *cobra.Command {
	c := &cobra.Command{
		Use:   use,
		Short: short,
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return usagef("unknown command %q for %q", args[0], cmd.CommandPath())
			}
			return cmd.Help()
		},
	}
	c.AddCommand(subs...)
	return c
}

// args checks the number of positional arguments, as a usage error naming
// what is missing.
func args(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, got []string) error {
		switch {
		case len(got) < len(names):
			return usagef("%s needs %s", cmd.CommandPath(), strings.Join(names[len(got):], " and "))
		case len(got) > len(names):
			return usagef("%s takes %d argument(s), got %d: %s", cmd.CommandPath(), len(names), len(got), strings.Join(got, " "))
		}
		return nil
	}
}

func parseID(what, s string) (int64, error) {
	id, err := strconv.ParseInt(s, 10, 64)
	if err != nil || id <= 0 {
		return 0, usagef("%s must be a positive number, got %q", what, s)
	}
	return id, nil
}

// printJSON writes v indented, for -o json.
func (a *app) printJSON(v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(a.stdout, "%s\n", b)
	return err
}

func clusterCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "cluster",
		Short: "Show masters, the leader and workers with their load",
		Args:  args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			raw, err := a.client().Cluster(cmd.Context())
			if err != nil {
				return err
			}
			var v any
			if err := json.Unmarshal(raw, &v); err != nil {
				return fmt.Errorf("decode cluster view: %w", err)
			}
			return a.printJSON(v)
		},
	}
}
