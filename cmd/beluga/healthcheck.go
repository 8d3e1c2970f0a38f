package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"time"

	"github.com/spf13/cobra"
)

// healthcheckCommand is a container's HEALTHCHECK: one GET of a local
// /healthz, exit 0 on 200, 1 otherwise, silent on success. The images have
// no curl, and a bash /dev/tcp probe of an RPC port logs an unauthenticated
// connection on every check.
func healthcheckCommand() *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "healthcheck [URL]",
		Short: "GET a server's /healthz once: exit 0 on 200 (for container health checks)",
		Long: "GET URL (default: $BELUGA_HEALTHCHECK_URL, else http://127.0.0.1:12345/healthz) and exit 0 when it answers 200.\n" +
			"Masters and workers serve /healthz on --metrics-listen, the API and standalone on their API port.\n" +
			"An https URL is not verified: the check is of this host's own process.",
		Args: cobra.MaximumNArgs(1),
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 3*time.Second, "give up after this long")
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		target := "http://127.0.0.1:12345/healthz"
		if v := os.Getenv("BELUGA_HEALTHCHECK_URL"); v != "" {
			target = v
		}
		if len(args) == 1 {
			target = args[0]
		}
		u, err := url.Parse(target)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return usageError{fmt.Errorf("healthcheck: %q is not an http(s) URL", target)}
		}
		if timeout <= 0 {
			return usageError{fmt.Errorf("healthcheck: --timeout must be positive, got %s", timeout)}
		}
		ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
		if err != nil {
			return fmt.Errorf("healthcheck: %w", err)
		}
		c := &http.Client{Transport: &http.Transport{
			TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // a probe of the host's own process
		}}
		resp, err := c.Do(req)
		if err != nil {
			return &exitError{code: 1, msg: "healthcheck: " + err.Error()}
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		if resp.StatusCode != http.StatusOK {
			return &exitError{code: 1, msg: fmt.Sprintf("healthcheck: %s answered %s", u.Redacted(), resp.Status)}
		}
		return nil
	}
	return cmd
}
