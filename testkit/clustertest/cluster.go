// Package clustertest runs a real Beluga cluster for tests and benchmarks:
// a private ZooKeeper (one server or an ensemble, testkit/zktest), a fresh
// MariaDB or PostgreSQL database (testkit/mariadbtest, testkit/pgtest;
// Options.DB), `beluga db migrate`, then masters,
// workers and one api as child processes of the test binary, each on its own
// 127.0.0.1 port and directory with its output in a log file. Tests kill
// (-9), stop, pause and restart those processes and assert on the database
// and on marker files that tasks append to when they run (assert.go).
//
// Every child dies with the test binary (own process group, parent-death
// signal) and is killed when the test ends; when a test fails, the tail of
// every log and the task rows are printed.
package clustertest

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/beluga-scheduler/beluga/testkit/wait"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/api"
	"github.com/beluga-scheduler/beluga/api/client"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/testkit/freeport"
	"github.com/beluga-scheduler/beluga/testkit/mariadbtest"
	"github.com/beluga-scheduler/beluga/testkit/pgtest"
	"github.com/beluga-scheduler/beluga/testkit/testcert"
	"github.com/beluga-scheduler/beluga/testkit/zktest"
)

// Options says what to run. Zero values take the defaults noted.
type Options struct {
	Masters int // default 1
	Workers int // default 1
	// ZKNodes is the number of ZooKeeper servers: 1 (default), or an
	// ensemble (3 where quorum matters).
	ZKNodes int
	// SessionTimeout is the ZooKeeper session timeout of every process; it
	// bounds failover. Default 2s.
	SessionTimeout time.Duration
	WorkerSlots    int // tasks a worker runs at once; 0: the worker's default (2 x CPUs)
	// Env gives extra environment ("KEY=VALUE") to named processes
	// ("master-1", "worker-2", "api") from their first start on, e.g.
	// BELUGA_FAILPOINT. Process.SetEnv changes it for later restarts.
	Env map[string][]string
	// Args gives extra flags to named processes, after the common ones (the
	// later of two equal flags wins), e.g. a longer --zk-session-timeout
	// for the workers.
	Args map[string][]string
	// PrivateDB runs a mariadbd of the cluster's own (Cluster.MariaDB, which
	// can be restarted) instead of a database on the shared test server.
	PrivateDB bool
	// DB is the database server the cluster keeps its state in: "mysql"
	// (MariaDB, testkit/mariadbtest) or "postgres" (testkit/pgtest).
	// Default: $BELUGA_CLUSTERTEST_DB, else "mysql". PrivateDB is MariaDB's.
	DB       string
	Project  string // created at start; default "demo"
	LogLevel string // of every process; default "info"
	// Users runs named processes ("worker-1") as another OS user (its
	// name; the test must run as root): the process's dir, the cluster's
	// secret files and the binary's dir are made theirs to read. One such
	// user per cluster: the secret files are handed to it.
	Users map[string]string
	// Bin is the beluga binary; default: Build().
	Bin string
	// Dir holds everything (Launch; New uses t.TempDir()).
	Dir string
	// StartTimeout bounds each wait of the start-up; default 60s.
	StartTimeout time.Duration
	// TLS runs every process with a certificate of a CA made for the
	// cluster (Cluster.TLS): mutual TLS on the cluster ports, HTTPS API.
	TLS bool
	// Via, when set, is asked for the address each master and worker
	// reaches a service at and returns the one to give it instead (a
	// proxy's, so that a test can cut or slow one link): link is LinkZK
	// (the ZooKeeper address list), LinkDB (the database's host:port) or
	// LinkHost (the RPC address the process is advertised at, its --host:
	// workers reach a master there, the leader reaches a worker there).
	// For a worker it is also asked with LinkTo(master) for each master's
	// advertised address: the worker reaches that master at the address
	// returned (its --route), a link of its own to each master.
	// It is called once per process and link, before any process starts.
	Via func(process string, link Link, addr string) (string, error)
}

// Link names a connection Options.Via can reroute.
type Link string

// Links of a master or worker.
const (
	LinkZK   Link = "zk"
	LinkDB   Link = "db"
	LinkHost Link = "host"
)

// LinkTo is a worker's link to one master (Options.Via).
func LinkTo(master string) Link { return Link("to-" + master) }

func (o Options) withDefaults() Options {
	if o.Masters <= 0 {
		o.Masters = 1
	}
	if o.Workers <= 0 {
		o.Workers = 1
	}
	if o.ZKNodes <= 0 {
		o.ZKNodes = 1
	}
	if o.SessionTimeout <= 0 {
		o.SessionTimeout = 2 * time.Second
	}
	if o.Project == "" {
		o.Project = "demo"
	}
	if o.DB == "" {
		o.DB = os.Getenv("BELUGA_CLUSTERTEST_DB")
	}
	if o.DB == "" || o.PrivateDB {
		o.DB = "mysql"
	}
	if o.LogLevel == "" {
		o.LogLevel = "info"
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = 60 * time.Second
	}
	return o
}

// Cluster is a running Beluga cluster and the services under it.
type Cluster struct {
	Dir string
	// SecretFile holds the cluster secret every process is started with
	// (--cluster-secret-file); Secret is its content.
	SecretFile string
	Secret     []byte
	ZK         *zktest.Cluster     // one member unless Options.ZKNodes > 1
	MariaDB    *mariadbtest.Server // Options.PrivateDB only
	DBURL      string
	Store      *store.Store   // the cluster's database, for assertions
	Client     *client.Client // REST client of the api process, logged in as admin
	Token      string         // its bearer token
	API        *Process
	Masters    []*Process // master-1 is the first leader
	Workers    []*Process
	Project    string
	// TLS holds the certificate files every process gets (Options.TLS).
	TLS *testcert.Files
	// SecretKeyFile is the datasource key file (--secret-key-file) the api
	// (which seals passwords) and every worker (which opens them for sql
	// tasks) are started with; masters only pass sealed values along.
	SecretKeyFile string
	// MetricsToken is the bearer token of every process's /metrics (the
	// api's on its HTTP port, the others' on Process.MetricsAddr).
	MetricsToken string

	opts      Options
	dropDB    func()
	closeOnce sync.Once
}

// New starts a cluster for the test and tears it down when the test ends,
// printing every log's tail and the task rows first if the test failed (or
// always, with BELUGA_CLUSTERTEST_REPORT=1 in the environment). A cluster
// that cannot start fails the test.
func New(t testing.TB, o Options) *Cluster {
	t.Helper()
	o.Dir = t.TempDir()
	c, err := Launch(o)
	if err != nil {
		t.Fatalf("clustertest: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() || os.Getenv("BELUGA_CLUSTERTEST_REPORT") == "1" {
			t.Log(c.Report())
		}
		c.Close()
	})
	return c
}

// Launch is New without testing.TB, for benchmark programs; the caller
// calls Close. On error everything started is stopped, and the error
// carries the logs of the processes.
func Launch(o Options) (_ *Cluster, err error) {
	o = o.withDefaults()
	if o.Dir == "" {
		return nil, errors.New("clustertest: Options.Dir is required by Launch")
	}
	c := &Cluster{Dir: o.Dir, Project: o.Project, opts: o}
	defer func() {
		if err != nil {
			err = fmt.Errorf("%w\n%s", err, c.Report())
			c.Close()
		}
	}()
	bin := o.Bin
	if bin == "" {
		bin, err = Build()
	} else {
		bin, err = filepath.Abs(bin) // processes run in their own directories
	}
	if err != nil {
		return nil, err
	}
	if err := c.startZK(); err != nil {
		return nil, err
	}
	if err := c.startDB(bin); err != nil {
		return nil, err
	}
	if err := c.makeProcesses(bin); err != nil {
		return nil, err
	}
	// The api first (it shows who leads), then master-1 alone so that it is
	// the first leader, then everyone else.
	if err := c.API.start(); err != nil {
		return nil, err
	}
	c.Client = c.newAPIClient()
	if err := wait.Poll(o.StartTimeout, "the api to answer /healthz", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return c.Client.Health(ctx) == nil
	}); err != nil {
		return nil, err
	}
	// The api made the user admin with AdminPassword on its first start.
	lctx, lcancel := context.WithTimeout(context.Background(), 10*time.Second)
	lr, err := c.Client.Login(lctx, "admin", AdminPassword)
	lcancel()
	if err != nil {
		return nil, fmt.Errorf("log in to the api as admin: %w", err)
	}
	c.Client = c.Client.WithToken(lr.Token)
	c.Token = lr.Token
	if err := c.Masters[0].start(); err != nil {
		return nil, err
	}
	if err := wait.Poll(o.StartTimeout, "master-1 to lead", func() bool { return c.Leader() == c.Masters[0] }); err != nil {
		return nil, err
	}
	for _, p := range c.Processes() {
		if err := p.start(); err != nil { // no-op for those already running
			return nil, err
		}
	}
	if err := c.WaitReady(o.StartTimeout); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Client.CreateProject(ctx, o.Project, "clustertest"); err != nil {
		return nil, fmt.Errorf("create project %s: %w", o.Project, err)
	}
	return c, nil
}

// AdminPassword is the password of the user admin the api process makes
// on its first start (BELUGA_ADMIN_PASSWORD); Cluster.Client is logged in.
const AdminPassword = "clustertest-admin-password"

// newAPIClient is the REST client of the api process: over HTTPS trusting
// the cluster's CA with Options.TLS.
func (c *Cluster) newAPIClient() *client.Client {
	if c.TLS == nil {
		return client.NewClient("http://"+c.API.Addr, &http.Client{Timeout: 10 * time.Second})
	}
	pool := x509.NewCertPool()
	if b, err := os.ReadFile(c.TLS.CA); err == nil {
		pool.AppendCertsFromPEM(b)
	}
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	return client.NewClient("https://"+c.API.Addr, &http.Client{Timeout: 10 * time.Second, Transport: tr})
}

func (c *Cluster) startZK() error {
	dir := filepath.Join(c.Dir, "zookeeper")
	// zktest lets sessions last from 2 ticks to 60 s.
	tick := zktest.TickTime(min(200*time.Millisecond, c.opts.SessionTimeout/2))
	if c.opts.ZKNodes == 1 {
		s, err := zktest.StartProcess(dir, tick)
		if err != nil {
			return err
		}
		c.ZK = &zktest.Cluster{Servers: []*zktest.Server{s}}
		return nil
	}
	z, err := zktest.StartEnsemble(dir, c.opts.ZKNodes, tick)
	if err != nil {
		return err
	}
	c.ZK = z
	return nil
}

func (c *Cluster) startDB(bin string) error {
	var err error
	switch {
	case c.opts.PrivateDB:
		if c.MariaDB, err = mariadbtest.StartProcess(filepath.Join(c.Dir, "mariadb")); err != nil {
			return err
		}
		c.DBURL, c.dropDB, err = c.MariaDB.NewDatabase()
	case c.opts.DB == "mysql":
		c.DBURL, c.dropDB, err = mariadbtest.NewDatabase()
	case c.opts.DB == "postgres":
		c.DBURL, c.dropDB, err = pgtest.NewDatabase()
	default:
		err = fmt.Errorf("database %q: want mysql or postgres", c.opts.DB)
	}
	if err != nil {
		return err
	}
	out, err := exec.Command(bin, "db", "migrate", "--db", c.DBURL, "--log-level", "warn").CombinedOutput()
	if err != nil {
		return fmt.Errorf("beluga db migrate: %v\n%s", err, out)
	}
	c.Store, err = store.Open(context.Background(), c.DBURL, zap.NewNop())
	return err
}

func (c *Cluster) makeProcesses(bin string) error {
	o := c.opts
	ports, err := freeport.Take(2*(o.Masters+o.Workers) + 1) // RPC or HTTP, then metrics
	if err != nil {
		return err
	}
	c.SecretFile = filepath.Join(c.Dir, "cluster-secret")
	c.Secret = []byte(fmt.Sprintf("clustertest-secret-%d-%d", os.Getpid(), time.Now().UnixNano()))
	if err := os.WriteFile(c.SecretFile, c.Secret, 0o600); err != nil {
		return err
	}
	c.SecretKeyFile = filepath.Join(c.Dir, "secret.key")
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	if err := os.WriteFile(c.SecretKeyFile, []byte(hex.EncodeToString(key)), 0o600); err != nil {
		return err
	}
	keyFlag := []string{"--secret-key-file", c.SecretKeyFile}
	c.MetricsToken = hex.EncodeToString(key[:16])
	tokenFile := filepath.Join(c.Dir, "metrics-token")
	if err := os.WriteFile(tokenFile, []byte(c.MetricsToken+"\n"), 0o600); err != nil {
		return err
	}
	common := []string{"--metrics-token-file", tokenFile, "--zk-session-timeout", o.SessionTimeout.String(), "--log-level", o.LogLevel,
		"--cluster-secret-file", c.SecretFile}
	if o.TLS {
		ca, err := testcert.NewCA("clustertest CA")
		if err != nil {
			return err
		}
		f, err := ca.WriteFiles(c.Dir, "node", "127.0.0.1", "localhost")
		if err != nil {
			return err
		}
		c.TLS = &f
		common = append(common, "--tls-cert", f.Cert, "--tls-key", f.Key, "--tls-ca", f.CA)
	}
	newProc := func(name string, role Role, i int, args ...string) (*Process, error) {
		port := ports[i]
		p := &Process{Name: name, Role: role, Addr: fmt.Sprintf("127.0.0.1:%d", port),
			Dir: filepath.Join(c.Dir, name), bin: bin, env: o.Env[name]}
		p.LogPath = filepath.Join(p.Dir, name+".log")
		if role != RoleAPI {
			p.MetricsAddr = fmt.Sprintf("127.0.0.1:%d", ports[i+o.Masters+o.Workers])
			args = append(args, "--metrics-listen", p.MetricsAddr)
		}
		links, err := c.links(p)
		if err != nil {
			return nil, err
		}
		p.args = append(append(append(append([]string{string(role), "--listen", p.Addr}, args...), links...), common...), o.Args[name]...)
		return p, os.MkdirAll(p.Dir, 0o755)
	}
	if c.API, err = newProc("api", RoleAPI, 0, append([]string{"--db", c.DBURL, "--data-dir", filepath.Join(c.Dir, "api")}, keyFlag...)...); err != nil {
		return err
	}
	c.API.env = append([]string{"BELUGA_ADMIN_PASSWORD=" + AdminPassword}, c.API.env...)
	for i := range o.Masters {
		p, err := newProc(fmt.Sprintf("master-%d", i+1), RoleMaster, 1+i)
		if err != nil {
			return err
		}
		c.Masters = append(c.Masters, p)
	}
	for i := range o.Workers {
		name := fmt.Sprintf("worker-%d", i+1)
		args := append([]string{"--data-dir", filepath.Join(c.Dir, name), "--shell", "bash"}, keyFlag...)
		if o.WorkerSlots > 0 {
			args = append(args, "--slots", strconv.Itoa(o.WorkerSlots))
		}
		p, err := newProc(name, RoleWorker, 1+o.Masters+i, args...)
		if err != nil {
			return err
		}
		c.Workers = append(c.Workers, p)
	}
	for name, u := range o.Users {
		if err := c.runAs(name, u, bin, c.SecretFile, c.SecretKeyFile, tokenFile); err != nil {
			return err
		}
	}
	for field, m := range map[string]map[string][]string{"Env": o.Env, "Args": o.Args} {
		for name := range m {
			if !slices.ContainsFunc(c.Processes(), func(p *Process) bool { return p.Name == name }) {
				return fmt.Errorf("Options.%s names %q, not a process of this cluster (master-N, worker-N, api)", field, name)
			}
		}
	}
	return nil
}

// links are the flags naming where process name reaches ZooKeeper, the
// database (masters) and where it is advertised (masters and workers; it
// sets p.Host), each passed through Options.Via when set.
func (c *Cluster) links(p *Process) ([]string, error) {
	name, role, listen := p.Name, p.Role, p.Addr
	p.Host = listen
	zk, db := c.ZK.Addr(), c.DBURL
	if c.opts.Via == nil || role == RoleAPI {
		if role == RoleMaster {
			return []string{"--zk", zk, "--db", db}, nil
		}
		return []string{"--zk", zk}, nil // the api's --db is among its own flags
	}
	var err error
	if zk, err = c.opts.Via(name, LinkZK, zk); err != nil {
		return nil, err
	}
	host, err := c.opts.Via(name, LinkHost, listen)
	if err != nil {
		return nil, err
	}
	p.Host = host
	out := []string{"--zk", zk, "--host", host}
	if role == RoleWorker {
		var routes []string
		for _, m := range c.Masters {
			via, err := c.opts.Via(name, LinkTo(m.Name), m.Host)
			if err != nil {
				return nil, err
			}
			routes = append(routes, m.Host+"="+via)
		}
		if len(routes) > 0 {
			out = append(out, "--route", strings.Join(routes, ","))
		}
	}
	if role == RoleMaster {
		u, err := url.Parse(db)
		if err != nil {
			return nil, fmt.Errorf("database URL: %w", err)
		}
		if u.Host, err = c.opts.Via(name, LinkDB, u.Host); err != nil {
			return nil, err
		}
		out = append(out, "--db", u.String())
	}
	return out, nil
}

// Processes lists every beluga process: masters, workers, then the api.
func (c *Cluster) Processes() []*Process {
	var out []*Process
	out = append(out, c.Masters...)
	out = append(out, c.Workers...)
	if c.API != nil {
		out = append(out, c.API)
	}
	return out
}

// View returns GET /api/v1/cluster.
func (c *Cluster) View() (api.Cluster, error) {
	var v api.Cluster
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	raw, err := c.Client.Cluster(ctx)
	if err != nil {
		return v, err
	}
	return v, json.Unmarshal(raw, &v)
}

// Leader is the master process the cluster view shows as active with a
// leader term of its own recorded in the DB, or nil.
func (c *Cluster) Leader() *Process {
	v, err := c.View()
	if err != nil {
		return nil
	}
	for _, m := range v.Masters {
		if m.Role == "active" && m.Epoch > 0 {
			return c.master(m.Address)
		}
	}
	return nil
}

func (c *Cluster) master(addr string) *Process {
	for _, p := range c.Masters {
		if p.Host == addr {
			return p
		}
	}
	return nil
}

// WaitReady waits until the api answers and the cluster view lists exactly
// the masters and workers that run and are not paused, with one of those
// masters active in a term of its own.
func (c *Cluster) WaitReady(within time.Duration) error {
	var last string
	err := wait.Poll(within, "the cluster view to match the running processes", func() bool {
		v, err := c.View()
		if err != nil {
			last = err.Error()
			return false
		}
		var ms, ws []string
		active := ""
		for _, m := range v.Masters {
			ms = append(ms, m.Address)
			if m.Role == "active" && m.Epoch > 0 {
				active = m.Address
			}
		}
		for _, w := range v.Workers {
			ws = append(ws, w.Address)
		}
		last = fmt.Sprintf("masters %s active %q, workers %s", addrList(ms), active, addrList(ws))
		lead := c.master(active)
		return addrList(ms) == liveAddrs(c.Masters) && addrList(ws) == liveAddrs(c.Workers) &&
			lead != nil && lead.Running() && !lead.Paused()
	})
	if err != nil {
		return fmt.Errorf("%w; last view: %s", err, last)
	}
	return nil
}

// liveAddrs lists the addresses of the processes that run and are not paused.
func liveAddrs(ps []*Process) string {
	var as []string
	for _, p := range ps {
		if p.Running() && !p.Paused() {
			as = append(as, p.Host)
		}
	}
	return addrList(as)
}

func addrList(as []string) string {
	as = slices.Clone(as)
	slices.Sort(as)
	return "[" + strings.Join(as, ",") + "]"
}

// Eventually waits until cond holds, failing the test after within.
func (c *Cluster) Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	if err := wait.Poll(within, what, cond); err != nil {
		t.Fatal(err)
	}
}

// WaitLeader waits until a master other than not (nil: any) leads, and
// returns it.
func (c *Cluster) WaitLeader(t testing.TB, within time.Duration, not *Process) *Process {
	t.Helper()
	var lead *Process
	c.Eventually(t, within, "a new leader", func() bool {
		lead = c.Leader()
		return lead != nil && lead != not
	})
	return lead
}

// Apply stores a workflow spec in the cluster's project.
func (c *Cluster) Apply(t testing.TB, wf spec.Workflow) {
	t.Helper()
	b, err := json.Marshal(wf)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := c.Client.ApplyWorkflow(ctx, c.Project, b); err != nil {
		t.Fatalf("apply workflow %s: %v", wf.Name, err)
	}
}

// Run starts a run of a workflow through the api and returns the instance id.
func (c *Cluster) Run(t testing.TB, workflow string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	inst, err := c.Client.Run(ctx, c.Project, workflow, client.RunOptions{})
	if err != nil {
		t.Fatalf("run workflow %s: %v", workflow, err)
	}
	return inst.ID
}

// Close kills every process, drops the database and stops the services.
// Safe to call twice.
func (c *Cluster) Close() {
	c.closeOnce.Do(func() {
		var wg sync.WaitGroup
		for _, p := range c.Processes() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p.Kill9()
			}()
		}
		wg.Wait()
		if c.Store != nil {
			c.Store.Close()
		}
		if c.dropDB != nil && c.MariaDB == nil {
			c.dropDB() // a private server goes away whole
		}
		if c.MariaDB != nil {
			c.MariaDB.Stop()
		}
		if c.ZK != nil {
			c.ZK.Stop()
		}
	})
}

// Report is the tail of every log and the rows of every instance, for a
// failed test.
func (c *Cluster) Report() string {
	var b strings.Builder
	for _, p := range c.Processes() {
		fmt.Fprintf(&b, "--- %s (%s) log, tail:\n%s\n", p.Name, p.Addr, p.LogTail(80))
	}
	if c.ZK != nil {
		for i, s := range c.ZK.Servers {
			fmt.Fprintf(&b, "--- zookeeper %d (%s), tail:\n%s\n", i+1, s.Addr(), s.LogTail(15))
		}
	}
	if c.MariaDB != nil {
		fmt.Fprintf(&b, "--- mariadbd error log, tail:\n%s\n", c.MariaDB.LogTail(15))
	}
	if c.Store != nil {
		b.WriteString(c.dumpRows())
	}
	return b.String()
}

// dumpRows renders the fence, every instance and its task rows.
func (c *Cluster) dumpRows() string {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var b strings.Builder
	if ti, err := c.Store.TermCurrentInfo(ctx); err == nil {
		fmt.Fprintf(&b, "--- fence: epoch %d host %s\n", ti.Epoch, ti.Host)
	}
	insts, _, err := c.Store.InstanceList(ctx, store.InstanceFilter{Limit: 1000})
	if err != nil {
		fmt.Fprintf(&b, "--- rows: %v\n", err)
		return b.String()
	}
	for i := len(insts) - 1; i >= 0; i-- {
		w := insts[i]
		fmt.Fprintf(&b, "--- instance %d %s: %s host %s epoch %d %s\n", w.ID, w.Workflow, w.State, w.Host, w.Epoch, w.Reason)
		tasks, err := c.Store.TaskList(ctx, w.ID)
		if err != nil {
			fmt.Fprintf(&b, "    %v\n", err)
			continue
		}
		for _, tk := range tasks {
			fmt.Fprintf(&b, "    task %d %s attempt %d %s superseded=%v host %s dispatch %s start %s end %s\n",
				tk.ID, tk.Name, tk.Attempt, tk.State, tk.Superseded, tk.Host,
				clock(tk.DispatchTime), clock(tk.StartTime), clock(tk.EndTime))
		}
	}
	return b.String()
}

func clock(t *time.Time) string {
	if t == nil {
		return "-"
	}
	return t.Local().Format("15:04:05.000")
}
