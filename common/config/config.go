// Package config holds Beluga's settings and where they come from: defaults,
// then a YAML file (--config), then BELUGA_* environment variables, then
// command-line flags, each overriding the one before.
package config

import (
	"bytes"
	"fmt"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Config is every setting of every process role.
type Config struct {
	DB string `yaml:"db" env:"BELUGA_DB"`
	// DBFile names a file holding the database URL: a password in it is not
	// on a command line, where ps shows it. ReadDBFile reads it into DB.
	DBFile string `yaml:"db_file" env:"BELUGA_DB_FILE"`
	// SecretKeyFile holds the key that seals datasource passwords (API)
	// and opens them (workers running sql tasks). Standalone makes one
	// under its data dir when unset.
	SecretKeyFile string        `yaml:"secret_key_file" env:"BELUGA_SECRET_KEY_FILE"`
	DataDir       string        `yaml:"data_dir" env:"BELUGA_DATA_DIR"`
	Log           LogConfig     `yaml:"log"`
	API           APIConfig     `yaml:"api"`
	Master        MasterConfig  `yaml:"master"`
	Worker        WorkerConfig  `yaml:"worker"`
	ZK            ZKConfig      `yaml:"zk"`
	Cluster       ClusterConfig `yaml:"cluster"`
	Remote        RemoteConfig  `yaml:"remote"`
	TLS           TLSConfig     `yaml:"tls"`
	Metrics       MetricsConfig `yaml:"metrics"`
}

// MetricsConfig is where a master or worker serves GET /metrics (the API
// and standalone serve it on the API port) and the file of the bearer token
// a scraper must send.
type MetricsConfig struct {
	Listen    string `yaml:"listen" env:"BELUGA_METRICS_LISTEN"`
	TokenFile string `yaml:"token_file" env:"BELUGA_METRICS_TOKEN_FILE"`
}

// TLSConfig turns on TLS for the cluster ports (mutual, certificates from
// CAFile) and the API (HTTPS) when all three files are set.
type TLSConfig struct {
	CertFile string `yaml:"cert_file" env:"BELUGA_TLS_CERT_FILE"`
	KeyFile  string `yaml:"key_file" env:"BELUGA_TLS_KEY_FILE"`
	CAFile   string `yaml:"ca_file" env:"BELUGA_TLS_CA_FILE"`
}

// Enabled reports whether any TLS file is set (Check then wants all three).
func (t TLSConfig) Enabled() bool { return t.CertFile != "" || t.KeyFile != "" || t.CAFile != "" }

// Check wants all three files or none, naming what is missing.
func (t TLSConfig) Check() error {
	if !t.Enabled() {
		return nil
	}
	var missing []string
	for _, f := range []struct{ v, name string }{
		{t.CertFile, "--tls-cert (BELUGA_TLS_CERT_FILE, tls.cert_file)"},
		{t.KeyFile, "--tls-key (BELUGA_TLS_KEY_FILE, tls.key_file)"},
		{t.CAFile, "--tls-ca (BELUGA_TLS_CA_FILE, tls.ca_file)"},
	} {
		if f.v == "" {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("TLS needs a certificate, its key and the CA; missing %s", strings.Join(missing, " and "))
	}
	return nil
}

// RemoteConfig bounds what peers may cost the cluster ports (masters' and
// workers' RPC servers); 0 picks the default, a negative value turns a
// limit off.
type RemoteConfig struct {
	// IdleTimeout closes a connection that sent nothing this long (10m).
	IdleTimeout time.Duration `yaml:"idle_timeout" env:"BELUGA_REMOTE_IDLE_TIMEOUT"`
	// HandshakeTimeout closes a connection not authenticated this long after it opened (10s).
	HandshakeTimeout time.Duration `yaml:"handshake_timeout" env:"BELUGA_REMOTE_HANDSHAKE_TIMEOUT"`
	// MaxConnsPerPeer caps the open connections from one IP address (64).
	MaxConnsPerPeer int `yaml:"max_conns_per_peer" env:"BELUGA_REMOTE_MAX_CONNS_PER_PEER"`
}

// ClusterConfig is what members of a cluster share.
type ClusterConfig struct {
	// SecretFile holds the cluster secret (at least 16 bytes) that masters,
	// workers and API servers prove to each other and to ZooKeeper;
	// required by master, worker and api. Standalone makes its own under
	// the data dir.
	SecretFile string `yaml:"secret_file" env:"BELUGA_CLUSTER_SECRET_FILE"`
}

// LogConfig selects log output.
type LogConfig struct {
	Level  string `yaml:"level" env:"BELUGA_LOG_LEVEL"`
	Format string `yaml:"format" env:"BELUGA_LOG_FORMAT"`
}

// APIConfig is the REST server.
type APIConfig struct {
	Listen string `yaml:"listen" env:"BELUGA_API_LISTEN"`
	// AllowedHosts are further Host names the API answers (env: comma
	// separated; "*": any). Listening on loopback, it answers only
	// loopback names without them; elsewhere any name when none is listed.
	AllowedHosts []string `yaml:"allowed_hosts" env:"BELUGA_API_ALLOWED_HOSTS"`
	// AdminPassword is the password of the user admin made on first start
	// (empty user table); never in a file of settings. AdminPasswordFile
	// holds one instead. With neither, a random one is written to
	// <data dir>/admin-password.
	AdminPassword     string `yaml:"-" env:"BELUGA_ADMIN_PASSWORD"`
	AdminPasswordFile string `yaml:"admin_password_file" env:"BELUGA_ADMIN_PASSWORD_FILE"`
}

// BootstrapPassword is the admin password the settings give: the
// variable, else the first line of the file ("" for none).
func (a APIConfig) BootstrapPassword() (string, error) {
	if a.AdminPassword != "" || a.AdminPasswordFile == "" {
		return a.AdminPassword, nil
	}
	b, err := os.ReadFile(a.AdminPasswordFile)
	if err != nil {
		return "", fmt.Errorf("--admin-password-file: %w", err)
	}
	pw, _, _ := strings.Cut(string(b), "\n")
	pw = strings.TrimRight(pw, "\r")
	if pw == "" {
		return "", fmt.Errorf("--admin-password-file %s is empty", a.AdminPasswordFile)
	}
	return pw, nil
}

// MasterConfig is the scheduler.
type MasterConfig struct {
	Listen       string        `yaml:"listen" env:"BELUGA_MASTER_LISTEN"`
	Host         string        `yaml:"host" env:"BELUGA_MASTER_HOST"`
	PollInterval time.Duration `yaml:"poll_interval" env:"BELUGA_MASTER_POLL_INTERVAL"`
	// Selector picks workers: round_robin (default), random or lower_weight.
	Selector string `yaml:"selector" env:"BELUGA_MASTER_SELECTOR"`
	// MaxRunning caps the tasks in flight at once (platform concurrency); 0: none.
	MaxRunning int `yaml:"max_running" env:"BELUGA_MASTER_MAX_RUNNING"`
}

// WorkerConfig is the task runner.
type WorkerConfig struct {
	Listen string   `yaml:"listen" env:"BELUGA_WORKER_LISTEN"`
	Host   string   `yaml:"host" env:"BELUGA_WORKER_HOST"`
	Groups []string `yaml:"groups" env:"BELUGA_WORKER_GROUPS"`
	Slots  int      `yaml:"slots" env:"BELUGA_WORKER_SLOTS"`
	Shell  string   `yaml:"shell" env:"BELUGA_WORKER_SHELL"`
	// Routes reach a master at another address than the one it
	// advertises: entries "advertised=reach" (host:port each), for a NAT
	// between workers and masters.
	Routes []string `yaml:"routes" env:"BELUGA_WORKER_ROUTES"`
	// Python is the interpreter of python tasks; "" is python3.
	Python string `yaml:"python" env:"BELUGA_WORKER_PYTHON"`
	// EnvPassthrough names variables of the worker's environment its tasks
	// see besides PATH, HOME, LANG, TZ and USER.
	EnvPassthrough []string `yaml:"env_passthrough" env:"BELUGA_WORKER_ENV_PASSTHROUGH"`
	// CgroupDir: a cgroup2 directory the worker makes its tasks' cgroups
	// in; "auto" (default, ""): its own cgroup when possible; "off".
	CgroupDir string `yaml:"cgroup_dir" env:"BELUGA_WORKER_CGROUP_DIR"`
	// TaskUser is the OS user of tasks that name no tenant when the worker
	// runs as root; "" is beluga-task, made at start when missing.
	TaskUser string `yaml:"task_user" env:"BELUGA_WORKER_TASK_USER"`
	// TaskIsolation: "on" (default) or "off" (tasks run as the worker's
	// own user; see docs/security.md).
	TaskIsolation string `yaml:"task_isolation" env:"BELUGA_WORKER_TASK_ISOLATION"`
	// MaxLogBytes caps each task log; 0: 1 GiB.
	MaxLogBytes int `yaml:"max_log_bytes" env:"BELUGA_WORKER_MAX_LOG_BYTES"`
	// LogSweep is how often the worker deletes the task logs of runs a
	// retention purge deleted; 0: 10m, negative: never.
	LogSweep time.Duration `yaml:"log_sweep" env:"BELUGA_WORKER_LOG_SWEEP"`
	// MaxCPUPercent and MaxMemoryPercent: the worker takes no tasks while
	// the host is at or above them, until 10 points below; 0 (default): off.
	MaxCPUPercent    int `yaml:"max_cpu_percent" env:"BELUGA_WORKER_MAX_CPU_PERCENT"`
	MaxMemoryPercent int `yaml:"max_memory_percent" env:"BELUGA_WORKER_MAX_MEMORY_PERCENT"`
}

// ZKConfig is the ZooKeeper registry of a cluster.
type ZKConfig struct {
	Servers        string        `yaml:"servers" env:"BELUGA_ZK"`
	Root           string        `yaml:"root" env:"BELUGA_ZK_ROOT"`
	SessionTimeout time.Duration `yaml:"session_timeout" env:"BELUGA_ZK_SESSION_TIMEOUT"`
}

// Defaults returns the settings used when nothing else is given.
func Defaults() Config {
	return Config{
		DataDir: "beluga-data",
		Log:     LogConfig{Level: "info", Format: "console"},
		API:     APIConfig{Listen: "127.0.0.1:12345"},
		Master:  MasterConfig{Listen: "127.0.0.1:0", PollInterval: time.Second},
		Worker:  WorkerConfig{Listen: "127.0.0.1:0", Slots: 0, Shell: "bash"},
		Metrics: MetricsConfig{Listen: "127.0.0.1:0"},
		ZK:      ZKConfig{Root: "/beluga", SessionTimeout: 5 * time.Second},
	}
}

// Load returns the defaults overlaid with the file at path (if not empty)
// and then with the environment. Unknown keys in the file are errors.
func Load(path string, env func(string) (string, bool)) (Config, error) {
	c := Defaults()
	if path != "" {
		b, err := os.ReadFile(path)
		if err != nil {
			return c, fmt.Errorf("config file: %w", err)
		}
		dec := yaml.NewDecoder(bytes.NewReader(b))
		dec.KnownFields(true)
		if err := dec.Decode(&c); err != nil && err.Error() != "EOF" {
			return c, fmt.Errorf("config file %s: %w", path, err)
		}
	}
	if env == nil {
		env = os.LookupEnv
	}
	if err := applyEnv(reflect.ValueOf(&c).Elem(), env); err != nil {
		return c, err
	}
	return c, nil
}

func applyEnv(v reflect.Value, env func(string) (string, bool)) error {
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f, fv := t.Field(i), v.Field(i)
		if f.Type.Kind() == reflect.Struct {
			if err := applyEnv(fv, env); err != nil {
				return err
			}
			continue
		}
		name := f.Tag.Get("env")
		raw, ok := env(name)
		if name == "" || !ok {
			continue
		}
		if err := setValue(fv, raw); err != nil {
			return fmt.Errorf("environment %s=%q: %w", name, raw, err)
		}
	}
	return nil
}

func setValue(fv reflect.Value, raw string) error {
	switch fv.Interface().(type) {
	case string:
		fv.SetString(raw)
	case int:
		n, err := strconv.Atoi(raw)
		if err != nil {
			return fmt.Errorf("want an integer")
		}
		fv.SetInt(int64(n))
	case time.Duration:
		d, err := time.ParseDuration(raw)
		if err != nil {
			return fmt.Errorf("want a duration such as 5s")
		}
		fv.SetInt(int64(d))
	case []string:
		var out []string
		for _, s := range strings.Split(raw, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
		fv.Set(reflect.ValueOf(out))
	default:
		return fmt.Errorf("unsupported setting type %s", fv.Type())
	}
	return nil
}

// ReadDBFile sets DB from the file DBFile names, if it names one: the URL is
// the file's text without surrounding blanks. Giving both is an error.
func (c *Config) ReadDBFile() error {
	if c.DBFile == "" {
		return nil
	}
	if c.DB != "" {
		return fmt.Errorf("db (%s) and db_file (%s) are both set; set one, not both", "--db, BELUGA_DB", "--db-file, BELUGA_DB_FILE")
	}
	b, err := os.ReadFile(c.DBFile)
	if err != nil {
		return fmt.Errorf("db_file: %w", err)
	}
	c.DB = strings.TrimSpace(string(b))
	if c.DB == "" {
		return fmt.Errorf("db_file %s is empty; it must hold the database URL", c.DBFile)
	}
	return nil
}

// DBURL returns the database URL, defaulting to a SQLite file in the data dir.
func (c Config) DBURL() string {
	if c.DB != "" {
		return c.DB
	}
	return "sqlite://" + strings.TrimSuffix(c.DataDir, "/") + "/beluga.db"
}
