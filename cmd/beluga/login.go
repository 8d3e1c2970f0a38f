package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/api/client"
)

// credentials is the CLI's token store, one entry per server URL, in
// <config dir>/beluga/credentials.json (0600).
type credentials struct {
	Servers map[string]credential `json:"servers"`
}

type credential struct {
	User      string    `json:"user"`
	Token     string    `json:"token"`
	TokenID   int64     `json:"token_id"`
	ExpiresAt time.Time `json:"expires_at"`
}

// configDir is where the CLI keeps its credentials: BELUGA_CONFIG_DIR, else
// the user's config dir (XDG_CONFIG_HOME or ~/.config on Linux) + /beluga.
func (a *app) configDir() (string, error) {
	if d := a.getenv("BELUGA_CONFIG_DIR"); d != "" {
		return d, nil
	}
	if d := a.getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "beluga"), nil
	}
	if h := a.getenv("HOME"); h != "" {
		return filepath.Join(h, ".config", "beluga"), nil
	}
	d, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("find the config dir for the token (set BELUGA_CONFIG_DIR): %w", err)
	}
	return filepath.Join(d, "beluga"), nil
}

func (a *app) credentialsFile() (string, error) {
	d, err := a.configDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(d, "credentials.json"), nil
}

func (a *app) loadCredentials() (credentials, string, error) {
	c := credentials{Servers: map[string]credential{}}
	path, err := a.credentialsFile()
	if err != nil {
		return c, "", err
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, path, nil
	}
	if err != nil {
		return c, path, fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, path, fmt.Errorf("%s is not valid JSON (delete it and log in again): %w", path, err)
	}
	if c.Servers == nil {
		c.Servers = map[string]credential{}
	}
	return c, path, nil
}

func saveCredentials(path string, c credentials) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("save the token: %w", err)
	}
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return fmt.Errorf("save the token: %w", err)
	}
	if err := os.Chmod(tmp, 0o600); err != nil {
		return fmt.Errorf("save the token: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("save the token: %w", err)
	}
	return nil
}

func serverKey(s string) string { return strings.TrimRight(s, "/") }

// token is what every verb authenticates with: BELUGA_TOKEN, else the
// token `beluga login` stored for --server ("" when there is none: the
// server answers 401 and the message says to log in).
func (a *app) token() string {
	if t := a.getenv("BELUGA_TOKEN"); t != "" {
		return t
	}
	c, _, err := a.loadCredentials()
	if err != nil {
		fmt.Fprintln(a.stderr, "beluga: warning: "+err.Error())
		return ""
	}
	return c.Servers[serverKey(a.server)].Token
}

// readPassword reads a password: without echo from a terminal, else the
// first line of stdin (--password-stdin, scripts).
func (a *app) readPassword() (string, error) {
	if f, ok := a.stdin.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		fmt.Fprint(a.stderr, "Password: ")
		b, err := term.ReadPassword(int(f.Fd()))
		fmt.Fprintln(a.stderr)
		if err != nil {
			return "", fmt.Errorf("read the password: %w", err)
		}
		return string(b), nil
	}
	line, err := bufio.NewReader(a.stdin).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", fmt.Errorf("read the password from stdin: %w", err)
	}
	pw := strings.TrimRight(line, "\r\n")
	if pw == "" {
		return "", usagef("no password on stdin")
	}
	return pw, nil
}

func loginCommand(a *app) *cobra.Command {
	var username string
	var ttl time.Duration
	c := &cobra.Command{
		Use:   "login",
		Short: "Log in and store a personal access token for --server",
		Long: "Logs in with the password (asked for on a terminal, else read from the first line of stdin), " +
			"makes a personal access token valid for --ttl and stores it in <config dir>/beluga/credentials.json (0600), " +
			"where every other verb finds it. BELUGA_TOKEN, when set, is used instead.",
		Args: args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if username == "" {
				return usagef("--username is required")
			}
			pw, err := a.readPassword()
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			base := a.bareClient()
			host, _ := os.Hostname()
			nt, err := base.LoginForToken(ctx, username, pw, "beluga login on "+host, ttl)
			if err != nil {
				return err
			}
			creds, path, err := a.loadCredentials()
			if err != nil {
				return err
			}
			creds.Servers[serverKey(a.server)] = credential{User: username, Token: nt.Token, TokenID: nt.TokenID, ExpiresAt: nt.ExpiresAt.Time}
			if err := saveCredentials(path, creds); err != nil {
				return err
			}
			_, err = fmt.Fprintf(a.stdout, "logged in to %s as %s; token stored in %s, valid until %s\n",
				a.server, username, path, nt.ExpiresAt.UTC().Format(time.RFC3339))
			return err
		},
	}
	c.Flags().StringVarP(&username, "username", "u", "", "user name")
	c.Flags().DurationVar(&ttl, "ttl", 30*24*time.Hour, "how long the stored token is valid")
	return c
}

func logoutCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "logout",
		Short: "Revoke and forget the token stored for --server",
		Args:  args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			creds, path, err := a.loadCredentials()
			if err != nil {
				return err
			}
			cr, ok := creds.Servers[serverKey(a.server)]
			if !ok {
				_, err := fmt.Fprintf(a.stdout, "no token stored for %s\n", a.server)
				return err
			}
			if err := a.bareClient().WithToken(cr.Token).DeleteToken(cmd.Context(), cr.TokenID); err != nil {
				var ae *client.APIError
				if !errors.As(err, &ae) || ae.Status != 401 {
					return err
				}
			}
			delete(creds.Servers, serverKey(a.server))
			if err := saveCredentials(path, creds); err != nil {
				return err
			}
			_, err = fmt.Fprintf(a.stdout, "logged out of %s\n", a.server)
			return err
		},
	}
}

func whoamiCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "whoami",
		Short: "Show the user the CLI is authenticated as",
		Args:  args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			me, err := a.client().Me(cmd.Context())
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(me)
			}
			_, err = fmt.Fprintf(a.stdout, "%s (%s)\n", me.Username, me.Role)
			return err
		},
	}
}

func auditCommand(a *app) *cobra.Command {
	var f client.AuditFilter
	var since string
	c := &cobra.Command{
		Use:   "audit",
		Short: "Show the audit trail, newest first (admins)",
		Args:  args(),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if since != "" {
				t, err := time.Parse(time.RFC3339, since)
				if err != nil {
					d, derr := time.ParseDuration(since)
					if derr != nil {
						return usagef("--since %q: give an RFC 3339 time or a duration such as 24h", since)
					}
					t = time.Now().Add(-d)
				}
				f.Since = t
			}
			es, err := a.client().Audit(cmd.Context(), f)
			if err != nil {
				return err
			}
			if a.json() {
				return a.printJSON(api.List[api.AuditEntry]{Items: es})
			}
			t := newTable(a.stdout, "ID", "AT", "USER", "ACTION", "RESOURCE", "ADDRESS", "STATUS", "OUTCOME")
			for _, e := range es {
				t.row(strconv.FormatInt(e.ID, 10), when(&e.At), e.User, e.Action, e.Resource, e.Address, strconv.Itoa(e.Status), e.Outcome)
			}
			return t.flush()
		},
	}
	c.Flags().StringVar(&f.User, "user", "", "only this user's entries")
	c.Flags().StringVar(&f.Action, "action", "", `only this action, e.g. "POST /api/v1/instances/{id}/actions"`)
	c.Flags().StringVar(&f.Resource, "resource", "", "only paths starting with this")
	c.Flags().StringVar(&since, "since", "", "only entries since this time (RFC 3339) or this long ago (24h)")
	c.Flags().IntVar(&f.Limit, "limit", 100, "at most this many entries")
	return c
}
