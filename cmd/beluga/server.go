package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/common/config"
	"github.com/beluga-scheduler/beluga/common/dirlock"
	"github.com/beluga-scheduler/beluga/common/logging"
	"github.com/beluga-scheduler/beluga/common/store"
	bmaster "github.com/beluga-scheduler/beluga/master"
	"github.com/beluga-scheduler/beluga/remote"
	"github.com/beluga-scheduler/beluga/standalone"
)

// serverCommands returns the long-running subcommands (standalone, master,
// worker, api) and db migrate. The CLI verbs live in the other files of this
// package.
func serverCommands() []*cobra.Command {
	return []*cobra.Command{standaloneCommand(), masterCommand(), workerCommand(), apiCommand(), dbCommand(), healthcheckCommand()}
}

// settings binds the flags shared by server commands onto a config loaded
// from --config and the environment; flags given on the command line win.
type settings struct {
	configFile string
	flags      *pflag.FlagSet
	apply      []func(c *config.Config)
}

func (s *settings) str(name, usage string, set func(c *config.Config, v string)) {
	v := s.flags.String(name, "", usage)
	s.apply = append(s.apply, func(c *config.Config) {
		if s.flags.Changed(name) {
			set(c, *v)
		}
	})
}

func (s *settings) int(name, usage string, set func(c *config.Config, v int)) {
	v := s.flags.Int(name, 0, usage)
	s.apply = append(s.apply, func(c *config.Config) {
		if s.flags.Changed(name) {
			set(c, *v)
		}
	})
}

func (s *settings) dur(name, usage string, set func(c *config.Config, v time.Duration)) {
	v := s.flags.Duration(name, 0, usage)
	s.apply = append(s.apply, func(c *config.Config) {
		if s.flags.Changed(name) {
			set(c, *v)
		}
	})
}

func newSettings(cmd *cobra.Command) *settings {
	s := &settings{flags: cmd.Flags()}
	s.flags.StringVar(&s.configFile, "config", "", "YAML config file (flags and BELUGA_* variables override it)")
	s.str("db", "database URL: sqlite:///path/file.db, mysql://user:pass@host:3306/db or postgres://user:pass@host:5432/db (env BELUGA_DB)",
		func(c *config.Config, v string) { c.DB = v })
	s.str("db-file", "file holding the database URL, which keeps its password out of ps (env BELUGA_DB_FILE)",
		func(c *config.Config, v string) { c.DBFile = v })
	s.str("log-level", "debug, info, warn or error", func(c *config.Config, v string) { c.Log.Level = v })
	s.str("log-format", "console or json", func(c *config.Config, v string) { c.Log.Format = v })
	return s
}

func (s *settings) load() (config.Config, *zap.Logger, error) {
	c, err := config.Load(s.configFile, nil)
	if err != nil {
		return c, nil, usageError{err}
	}
	for _, a := range s.apply {
		a(&c)
	}
	if err := c.ReadDBFile(); err != nil {
		return c, nil, usageError{err}
	}
	log, err := logging.New(logging.Options{Level: c.Log.Level, Format: c.Log.Format})
	if err != nil {
		return c, nil, usageError{err}
	}
	if s.flags.Changed("db") && store.RedactURL(c.DB) != c.DB {
		log.Warn("the --db URL holds a password, which ps shows to every user of this host; use --db-file or BELUGA_DB instead",
			zap.String("db", store.RedactURL(c.DB)))
	}
	return c, log, nil
}

// allowedHostsFlag adds --allowed-hosts, shared by api and standalone.
func allowedHostsFlag(s *settings) {
	s.str("allowed-hosts", "Host names the API answers besides loopback ones, comma-separated (* any; default: "+
		"none on a loopback --listen, any elsewhere)",
		func(c *config.Config, v string) { c.API.AllowedHosts = splitList(v) })
}

// overloadFlags adds the worker's overload thresholds, shared by worker and standalone.
func overloadFlags(s *settings) {
	s.int("max-cpu-percent", "take no tasks while host CPU use is at or above this, until 10 points below (0: off, the default)",
		func(c *config.Config, v int) { c.Worker.MaxCPUPercent = v })
	s.int("max-memory-percent", "take no tasks while host memory use is at or above this, until 10 points below (0: off, the default)",
		func(c *config.Config, v int) { c.Worker.MaxMemoryPercent = v })
}

// tlsFlags adds --tls-cert, --tls-key and --tls-ca, shared by every server command.
func tlsFlags(s *settings) {
	s.str("tls-cert", "PEM certificate: with --tls-key and --tls-ca, TLS on the cluster ports (mutual) and the API (HTTPS) "+
		"(env BELUGA_TLS_CERT_FILE)", func(c *config.Config, v string) { c.TLS.CertFile = v })
	s.str("tls-key", "PEM key of --tls-cert (env BELUGA_TLS_KEY_FILE)", func(c *config.Config, v string) { c.TLS.KeyFile = v })
	s.str("tls-ca", "PEM CA certificate that peers' certificates must chain to (env BELUGA_TLS_CA_FILE)",
		func(c *config.Config, v string) { c.TLS.CAFile = v })
}

// loadTLS reads the TLS files; a partial setting or a bad file is a usage
// error (exit 2) naming the setting.
func loadTLS(c config.Config) (*remote.TLS, error) {
	tl, err := standalone.LoadTLS(c)
	if err != nil {
		return nil, usageError{err}
	}
	return tl, nil
}

// apiURL is how the API at addr is reached.
func apiURL(tl *remote.TLS, addr string) string {
	if tl != nil {
		return "https://" + addr
	}
	return "http://" + addr
}

// usageError marks errors in what the user gave (exit code 2).
type usageError struct{ error }

func (e usageError) Unwrap() error { return e.error }

func standaloneCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "standalone",
		Short: "Run master, worker and API in one process on an embedded SQLite file",
		Args:  cobra.NoArgs,
	}
	s := newSettings(cmd)
	s.str("listen", "REST API and UI address (default 127.0.0.1:12345)", func(c *config.Config, v string) { c.API.Listen = v })
	allowedHostsFlag(s)
	s.str("data-dir", "directory for the SQLite file, task logs and work dirs (default ./beluga-data)",
		func(c *config.Config, v string) { c.DataDir = v })
	s.int("slots", "tasks the worker runs at once (default 2 x CPUs)", func(c *config.Config, v int) { c.Worker.Slots = v })
	s.str("shell", "shell that runs shell tasks: bash or sh", func(c *config.Config, v string) { c.Worker.Shell = v })
	overloadFlags(s)
	masterFlags(s)
	tlsFlags(s)
	secretKeyFlag(s, "default <data-dir>/secret.key, made (0600) on first start and reused")
	metricsFlags(s, false)
	adminPasswordFlag(s)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		c, log, err := s.load()
		if err != nil {
			return err
		}
		defer log.Sync() //nolint:errcheck // stderr
		if _, err := bmaster.ParseSelector(c.Master.Selector); err != nil {
			return usageError{err}
		}
		if _, _, err := store.ParseURL(c.DBURL()); err != nil {
			return usageError{err}
		}
		if _, _, err := net.SplitHostPort(c.API.Listen); err != nil {
			return usageError{fmt.Errorf("--listen %q: %w", c.API.Listen, err)}
		}
		if err := api.CheckAllowedHosts(c.API.AllowedHosts); err != nil {
			return usageError{err}
		}
		tl, err := loadTLS(c)
		if err != nil {
			return err
		}
		if c.SecretKeyFile != "" {
			if _, err := loadSecretKey(c, log); err != nil {
				return usageError{err}
			}
		}
		lock, err := lockDataDir(c.DataDir)
		if err != nil {
			return err
		}
		defer lock.Release()
		ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		if err := startPprof(log); err != nil {
			return usageError{err}
		}
		sa, err := standalone.Start(ctx, c, log)
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "beluga standalone: API and UI on %s (data in %s; metrics on /metrics, token in %s)%s\n",
			apiURL(tl, sa.API.Addr()), c.DataDir, sa.MetricsTokenFile, adminNote(sa.AdminNote))
		var dead error
		select { // a dead RPC server: exit non-zero so a supervisor restarts the process
		case <-ctx.Done():
		case <-sa.Master.Dead():
			dead = sa.Master.TransportErr()
		case <-sa.Worker.Dead():
			dead = sa.Worker.TransportErr()
		}
		log.Info("shutting down")
		sa.Stop() // in the order standalone.Stop states; then the data-dir lock (deferred)
		return dead
	}
	return cmd
}

func dbCommand() *cobra.Command {
	db := &cobra.Command{Use: "db", Short: "Database maintenance"}
	mig := &cobra.Command{Use: "migrate", Short: "Apply the schema files of sql/ that are not applied yet", Args: cobra.NoArgs}
	s := newSettings(mig)
	s.str("data-dir", "data directory (for the default SQLite file)", func(c *config.Config, v string) { c.DataDir = v })
	mig.RunE = func(cmd *cobra.Command, _ []string) error {
		c, log, err := s.load()
		if err != nil {
			return err
		}
		if c.DB == "" {
			if err := os.MkdirAll(c.DataDir, 0o755); err != nil {
				return fmt.Errorf("data dir: %w", err)
			}
		}
		st, err := store.Open(cmd.Context(), c.DBURL(), log)
		if err != nil {
			return err
		}
		defer st.Close()
		applied, err := st.Migrate(cmd.Context())
		if err != nil {
			return err
		}
		if len(applied) == 0 {
			fmt.Fprintln(cmd.OutOrStdout(), "schema is up to date")
		}
		for _, a := range applied {
			fmt.Fprintln(cmd.OutOrStdout(), "applied", a)
		}
		return nil
	}
	db.AddCommand(mig)
	return db
}

// lockDataDir takes the data dir for this process (common/dirlock); a dir
// another live process holds is refused with exit 2, naming the holder.
func lockDataDir(dir string) (*dirlock.Lock, error) {
	l, err := dirlock.Acquire(dir)
	var held *dirlock.HeldError
	if errors.As(err, &held) {
		return nil, &exitError{code: exitUsage, msg: err.Error()}
	}
	return l, err
}
