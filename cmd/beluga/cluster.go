package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/common/clusterkey"
	"github.com/beluga-scheduler/beluga/common/config"
	"github.com/beluga-scheduler/beluga/common/registry"
	psecret "github.com/beluga-scheduler/beluga/common/secret"
	"github.com/beluga-scheduler/beluga/common/store"
	bmaster "github.com/beluga-scheduler/beluga/master"
	"github.com/beluga-scheduler/beluga/remote"
	wire "github.com/beluga-scheduler/beluga/remote/message"
	"github.com/beluga-scheduler/beluga/standalone"
)

// zkFlags adds the ZooKeeper settings of the cluster roles.
func zkFlags(s *settings) {
	s.str("zk", "ZooKeeper servers, host:port[,host:port...] (env BELUGA_ZK)", func(c *config.Config, v string) { c.ZK.Servers = v })
	s.str("zk-root", "ZooKeeper path Beluga keeps its nodes under (default /beluga)", func(c *config.Config, v string) { c.ZK.Root = v })
	s.dur("zk-session-timeout", "ZooKeeper session timeout; bounds failover time (default 5s)",
		func(c *config.Config, v time.Duration) { c.ZK.SessionTimeout = v })
}

// clusterSecretFlag adds --cluster-secret-file, which every cluster role needs.
func clusterSecretFlag(s *settings) {
	s.str("cluster-secret-file", "file holding the cluster secret (at least 16 bytes) shared by masters, workers and "+
		"API servers; required (env BELUGA_CLUSTER_SECRET_FILE)", func(c *config.Config, v string) { c.Cluster.SecretFile = v })
}

// clusterSecret loads the cluster secret; a missing setting or a bad file
// is a usage error (exit 2) naming the setting.
func clusterSecret(c config.Config) (clusterkey.Secret, error) {
	if c.Cluster.SecretFile == "" {
		return clusterkey.Secret{}, usageError{errors.New("--cluster-secret-file (BELUGA_CLUSTER_SECRET_FILE, config cluster.secret_file) " +
			"is required: the secret masters, workers and API servers share; make one with e.g. `head -c 32 /dev/urandom | base64 > FILE`")}
	}
	sec, err := clusterkey.Load(c.Cluster.SecretFile)
	if err != nil {
		return clusterkey.Secret{}, usageError{fmt.Errorf("--cluster-secret-file: %w", err)}
	}
	return sec, nil
}

// openZK connects to ZooKeeper; it retries until ctx ends (ZooKeeper down
// at start is waited for, with a log line every few tries).
func openZK(ctx context.Context, c config.Config, secret clusterkey.Secret, log *zap.Logger) (*registry.ZK, error) {
	if c.ZK.Servers == "" {
		return nil, usageError{fmt.Errorf("--zk is required (ZooKeeper servers, e.g. 127.0.0.1:2181)")}
	}
	z := registry.NewZK(registry.ZKConfig{Servers: strings.Split(c.ZK.Servers, ","), Root: c.ZK.Root,
		SessionTimeout: c.ZK.SessionTimeout, Secret: secret}, log)
	if err := z.Start(ctx); err != nil {
		return nil, fmt.Errorf("zookeeper %s: %w", c.ZK.Servers, err)
	}
	return z, nil
}

func openStore(ctx context.Context, c config.Config, log *zap.Logger, migrate bool) (*store.Store, error) {
	if c.DB == "" {
		return nil, usageError{fmt.Errorf("--db is required in cluster mode (e.g. mysql://user:pass@host:3306/beluga or postgres://user:pass@host:5432/beluga)")}
	}
	if _, _, err := store.ParseURL(c.DB); err != nil {
		return nil, usageError{err}
	}
	st, err := store.Open(ctx, c.DB, log)
	if err != nil {
		return nil, err
	}
	if migrate {
		if _, err := st.Migrate(ctx); err != nil {
			st.Close()
			return nil, err
		}
	}
	return st, nil
}

// openCluster opens the database (migrating it for a master) and then the
// ZooKeeper session of a cluster role; closeAll ends them in reverse.
func openCluster(ctx context.Context, c config.Config, secret clusterkey.Secret, log *zap.Logger, migrate bool) (*store.Store, *registry.ZK, func(), error) {
	st, err := openStore(ctx, c, log, migrate)
	if err != nil {
		return nil, nil, nil, err
	}
	box, err := psecret.NewBox(secret)
	if err != nil {
		st.Close()
		return nil, nil, nil, err
	}
	st = st.WithSecrets(box) // secret params are sealed and opened with the cluster's key
	z, err := openZK(ctx, c, secret, log)
	if err != nil {
		st.Close()
		return nil, nil, nil, err
	}
	return st, z, func() { z.Stop(); st.Close() }, nil
}

func masterCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "master", Short: "Run a master: campaigns for leadership; the leader schedules", Args: cobra.NoArgs}
	s := newSettings(cmd)
	zkFlags(s)
	clusterSecretFlag(s)
	s.str("listen", "RPC address workers report to (default 127.0.0.1:0)", func(c *config.Config, v string) { c.Master.Listen = v })
	s.str("host", "address advertised to workers (default: the bound address)", func(c *config.Config, v string) { c.Master.Host = v })
	masterFlags(s)
	tlsFlags(s)
	metricsFlags(s, true)
	secretKeyFlag(s, "opens the signing secrets of webhook subscriptions and the Git passwords of periodic syncs (the API servers' key file)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		c, log, err := s.load()
		if err != nil {
			return err
		}
		tl, err := loadTLS(c)
		if err != nil {
			return err
		}
		secret, err := clusterSecret(c)
		if err != nil {
			return err
		}
		mc, err := standalone.MasterConfig(c, secret, tl)
		if err != nil {
			return usageError{err}
		}
		defer log.Sync() //nolint:errcheck // stderr
		ctx := cmd.Context()
		if err := startPprof(log); err != nil {
			return usageError{err}
		}
		secrets, err := loadSecretKey(c, log) // opens webhook subscriptions' secrets
		if err != nil {
			return usageError{err}
		}
		st, z, closeAll, err := openCluster(ctx, c, secret, log, true)
		if err != nil {
			return err
		}
		defer closeAll()
		mc.Events = bmaster.EventsConfig{Secrets: secrets}
		mc.GitSync = standalone.GitSync(st, secrets, log, mc.TasksRunAsServer)
		m := bmaster.New(mc, st, z, z, log)
		ms, err := startMetrics(c, log)
		if err != nil {
			return err
		}
		defer ms.Stop()
		if err := m.Start(ctx); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "beluga master on %s (metrics on %s)\n", m.Addr(), ms.Addr())
		var dead error
		select {
		case <-ctx.Done():
		case <-m.Dead(): // exit non-zero: the supervisor restarts the process
			dead = m.TransportErr()
		}
		// Shutdown order: master (resigns, stops scheduling), then the
		// ZooKeeper session, then the database (closeAll, deferred).
		m.Stop()
		return dead
	}
	return cmd
}

func workerCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "worker", Short: "Run a worker: registers in ZooKeeper and runs the tasks masters dispatch", Args: cobra.NoArgs}
	s := newSettings(cmd)
	zkFlags(s)
	clusterSecretFlag(s)
	s.str("listen", "RPC address masters dispatch to (default 127.0.0.1:0)", func(c *config.Config, v string) { c.Worker.Listen = v })
	s.str("host", "address advertised to masters (default: the bound address)", func(c *config.Config, v string) { c.Worker.Host = v })
	s.str("group", "worker groups, comma-separated (default: default)", func(c *config.Config, v string) { c.Worker.Groups = splitList(v) })
	s.int("slots", "tasks run at once (default 2 x CPUs)", func(c *config.Config, v int) { c.Worker.Slots = v })
	s.str("shell", "shell that runs shell tasks: bash or sh", func(c *config.Config, v string) { c.Worker.Shell = v })
	s.str("route", "reach a master at another address than it advertises: advertised=reach entries, comma-separated (a NAT between)",
		func(c *config.Config, v string) { c.Worker.Routes = splitList(v) })
	overloadFlags(s)
	secretKeyFlag(s, "opens the datasource passwords of sql tasks (the API servers' key file)")
	s.str("data-dir", "directory for task logs and work dirs (default ./beluga-data)", func(c *config.Config, v string) { c.DataDir = v })
	tlsFlags(s)
	metricsFlags(s, true)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		c, log, err := s.load()
		if err != nil {
			return err
		}
		defer log.Sync() //nolint:errcheck // stderr
		ctx := cmd.Context()
		secret, err := clusterSecret(c)
		if err != nil {
			return err
		}
		if err := startPprof(log); err != nil {
			return usageError{err}
		}
		w, err := standalone.NewWorker(c, secret, log) // bad settings fail before any wait on ZooKeeper
		if err != nil {
			return usageError{err}
		}
		lock, err := lockDataDir(c.DataDir) // before any wait on ZooKeeper
		if err != nil {
			return err
		}
		defer lock.Release()
		z, err := openZK(ctx, c, secret, log)
		if err != nil {
			return err
		}
		defer z.Stop()
		ms, err := startMetrics(c, log)
		if err != nil {
			return err
		}
		defer ms.Stop()
		p, err := standalone.Announce(ctx, w, c, z, z, z, log)
		if err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "beluga worker on %s (metrics on %s)\n", w.Addr(), ms.Addr())
		var dead error
		select {
		case <-ctx.Done():
		case <-w.Dead(): // exit non-zero: the supervisor restarts the process
			dead = w.TransportErr()
		}
		// Shutdown order: stop the worker (kills its tasks and waits for
		// them), then leave the registry (the master fails them over only
		// once they are dead), then the ZK session and the data-dir lock
		// (deferred).
		w.Stop()
		p.Stop()
		return dead
	}
	return cmd
}

func apiCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "api", Short: "Run the REST API (stateless; any number of them)", Args: cobra.NoArgs}
	s := newSettings(cmd)
	zkFlags(s)
	clusterSecretFlag(s)
	s.str("listen", "REST API address (default 127.0.0.1:12345)", func(c *config.Config, v string) { c.API.Listen = v })
	allowedHostsFlag(s)
	tlsFlags(s)
	secretKeyFlag(s, "seals datasource passwords; without it, storing or testing a datasource with a password is refused")
	metricsFlags(s, false)
	adminPasswordFlag(s)
	s.str("data-dir", "where a generated admin password is written on first start (default ./beluga-data)",
		func(c *config.Config, v string) { c.DataDir = v })
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		c, log, err := s.load()
		if err != nil {
			return err
		}
		defer log.Sync() //nolint:errcheck // stderr
		if err := api.CheckAllowedHosts(c.API.AllowedHosts); err != nil {
			return usageError{err}
		}
		tl, err := loadTLS(c)
		if err != nil {
			return err
		}
		secret, err := clusterSecret(c)
		if err != nil {
			return err
		}
		secrets, err := loadSecretKey(c, log)
		if err != nil {
			return usageError{err}
		}
		mtoken, err := metricsToken(c, log)
		if err != nil {
			return err
		}
		ctx := cmd.Context()
		st, z, closeAll, err := openCluster(ctx, c, secret, log, false)
		if err != nil {
			return err
		}
		defer closeAll()
		rc := remote.NewClient(func(remote.Peer, uint64, wire.Message) {}, standalone.APIClientOptions(secret, tl, c, log))
		if err := rc.Start(ctx); err != nil {
			return err
		}
		defer rc.Stop()
		nudge := func() {
			// Best effort: the leader also scans the command table.
			if leader, ok := z.Leader(); ok {
				sctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				_ = rc.Send(sctx, leader, wire.Nudge{})
			}
		}
		pw, err := c.API.BootstrapPassword()
		if err != nil {
			return usageError{err}
		}
		note, err := api.Bootstrap(ctx, st, pw, c.DataDir, log)
		if err != nil {
			return err
		}
		srv := standalone.NewAPIServer(c, tl, api.Deps{Store: st, Notify: nudge, Logs: standalone.LogFetcher(rc, z),
			Cluster: api.ClusterView(st, z, z), Ready: func() bool { return true }, Log: log,
			Secrets: secrets, MetricsToken: mtoken})
		if err := srv.Start(ctx); err != nil {
			return err
		}
		fmt.Fprintf(cmd.OutOrStdout(), "beluga api on %s%s\n", apiURL(tl, srv.Addr()), adminNote(note))
		<-ctx.Done()
		// Shutdown order: the API server (no new requests; those in flight
		// finish), then the worker-log client, then the ZooKeeper session and
		// the database (both deferred, so in reverse).
		srv.Stop()
		return nil
	}
	return cmd
}

// adminPasswordFlag adds --admin-password-file (api, standalone).
func adminPasswordFlag(s *settings) {
	s.str("admin-password-file", "file whose first line is the password of the user admin made on first start "+
		"(env BELUGA_ADMIN_PASSWORD_FILE; or the password in BELUGA_ADMIN_PASSWORD; default: a random one in <data-dir>/admin-password)",
		func(c *config.Config, v string) { c.API.AdminPasswordFile = v })
}

// adminNote is the start line's part about the bootstrapped admin.
func adminNote(note string) string {
	if note == "" {
		return ""
	}
	return "; " + note
}

// secretKeyFlag adds --secret-key-file (api, worker, standalone; masters
// never see a password in clear).
func secretKeyFlag(s *settings, what string) {
	s.str("secret-key-file", "key file for datasource passwords (env BELUGA_SECRET_KEY_FILE); "+what,
		func(c *config.Config, v string) { c.SecretKeyFile = v })
}

// loadSecretKey reads the key file when one is set: a process given a key
// it cannot read does not start; one given none starts, and only what needs
// the key is refused.
func loadSecretKey(c config.Config, log *zap.Logger) (*psecret.Box, error) {
	if c.SecretKeyFile == "" {
		log.Info("no secret key file (--secret-key-file): datasources with a password cannot be stored, tested or used here")
		return nil, nil
	}
	b, loose, err := psecret.LoadKeyFile(c.SecretKeyFile)
	if err != nil {
		return nil, err
	}
	if loose {
		log.Warn("the secret key file can be read by other users; chmod 600 it", zap.String("file", c.SecretKeyFile))
	}
	return b, nil
}

// masterFlags adds the scheduling settings shared by master and standalone.
func masterFlags(s *settings) {
	s.str("selector", "worker selection: round_robin (default), random or lower_weight",
		func(c *config.Config, v string) { c.Master.Selector = v })
	s.int("max-running", "cap on tasks running at once across all workers (0: none)",
		func(c *config.Config, v int) { c.Master.MaxRunning = v })
}

func splitList(v string) []string {
	var out []string
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}
