// Package datasource owns the connection details of a managed datasource:
// their validation, and opening a database/sql handle on them with the
// driver of their type (go-sql-driver/mysql, jackc/pgx, the pure-Go
// SQLite). Errors it returns never hold the password.
package datasource

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgconn/ctxwatch"
	"github.com/jackc/pgx/v5/stdlib"
	sqlitedriver "github.com/ncruces/go-sqlite3/driver"
)

// Types of datasource.
const (
	MySQL    = "mysql"
	Postgres = "postgres"
	SQLite   = "sqlite"
)

// Types lists the supported types.
var Types = []string{MySQL, Postgres, SQLite}

// Limits on the fields.
const (
	MaxParams     = 64
	maxHost       = 255
	maxDatabase   = 1024
	maxUser       = 255
	maxPassword   = 1024
	maxParamKey   = 64
	maxParamValue = 1024
)

// Config is everything needed to connect. Password is the plain text; it
// is sealed at rest and only ever held in memory by the process connecting.
type Config struct {
	Type     string            `json:"type"`
	Host     string            `json:"host,omitempty"`
	Port     int               `json:"port,omitempty"`
	Database string            `json:"database,omitempty"`
	User     string            `json:"user,omitempty"`
	Password string            `json:"password,omitempty"`
	Params   map[string]string `json:"params,omitempty"`
}

// FieldError names the field a problem is in.
type FieldError struct {
	Field string
	Msg   string
}

func (e *FieldError) Error() string { return e.Field + ": " + e.Msg }

func fieldErr(field, format string, args ...any) error {
	return &FieldError{Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Validate checks c, naming the first field that is wrong; driver
// parameters are checked by the driver's own parser.
func (c Config) Validate() error {
	if err := c.validateFields(); err != nil {
		return err
	}
	switch c.Type {
	case MySQL:
		_, err := c.mysqlConfig()
		return err
	case Postgres:
		_, err := c.pgConfig()
		return err
	}
	return nil
}

func (c Config) validateFields() error {
	switch c.Type {
	case MySQL, Postgres:
		if c.Host == "" {
			return fieldErr("host", "is required for a %s datasource", c.Type)
		}
		if len(c.Host) > maxHost || strings.ContainsFunc(c.Host, func(r rune) bool { return unicode.IsSpace(r) || r == '/' || r == '@' || r == '?' }) {
			return fieldErr("host", "must be a host name or IP address of at most %d characters, without spaces, '/', '@' or '?'", maxHost)
		}
		if c.Port < 0 || c.Port > 65535 {
			return fieldErr("port", "must be from 1 to 65535 (or 0 for the default %d), got %d", defaultPort(c.Type), c.Port)
		}
		if c.User == "" {
			return fieldErr("user", "is required for a %s datasource", c.Type)
		}
		if len(c.User) > maxUser {
			return fieldErr("user", "is longer than %d characters", maxUser)
		}
		if len(c.Database) > maxDatabase {
			return fieldErr("database", "is longer than %d characters", maxDatabase)
		}
	case SQLite:
		if c.Database == "" {
			return fieldErr("database", "is required for a sqlite datasource: the absolute path of the database file")
		}
		if !filepath.IsAbs(c.Database) || strings.ContainsAny(c.Database, "?#") || len(c.Database) > maxDatabase {
			return fieldErr("database", "must be an absolute file path without '?' or '#', got %q", c.Database)
		}
		for f, set := range map[string]bool{"host": c.Host != "", "port": c.Port != 0, "user": c.User != "", "password": c.Password != ""} {
			if set {
				return fieldErr(f, "is not used by a sqlite datasource; leave it out")
			}
		}
	case "":
		return fieldErr("type", "is required: one of %s", strings.Join(Types, ", "))
	default:
		return fieldErr("type", "must be one of %s, got %q", strings.Join(Types, ", "), c.Type)
	}
	if len(c.Password) > maxPassword {
		return fieldErr("password", "is longer than %d characters", maxPassword)
	}
	if len(c.Params) > MaxParams {
		return fieldErr("params", "has %d entries; at most %d", len(c.Params), MaxParams)
	}
	for _, k := range sortedKeys(c.Params) {
		if k == "" || len(k) > maxParamKey || strings.ContainsFunc(k, func(r rune) bool {
			return !(r == '_' || r == '-' || r == '.' || r < unicode.MaxASCII && (unicode.IsLetter(r) || unicode.IsDigit(r)))
		}) {
			return fieldErr("params", "key %q must be 1 to %d ASCII letters, digits, '_', '-' or '.'", k, maxParamKey)
		}
		if len(c.Params[k]) > maxParamValue {
			return fieldErr("params."+k, "is longer than %d characters", maxParamValue)
		}
		if reserved(c.Type, k) {
			return fieldErr("params."+k, "is set by its own field; use %s instead", reservedField(k))
		}
		if c.Type == MySQL && strings.EqualFold(k, "allowAllFiles") {
			// The sql task runs in the worker: LOAD DATA LOCAL INFILE would
			// send any file the worker can read to the database, where the
			// task's author reads it back (docs/security.md, item 4).
			return fieldErr("params."+k, "is not allowed: it would let a sql task's statements send the worker's files to the server")
		}
	}
	return nil
}

// reserved params would override a field (or smuggle the password past
// the password field).
func reserved(typ, k string) bool {
	switch strings.ToLower(k) {
	case "user", "password", "host", "port", "dbname", "database", "passfile":
		return typ != SQLite
	}
	return false
}

func reservedField(k string) string {
	switch strings.ToLower(k) {
	case "dbname":
		return "database"
	case "passfile":
		return "password"
	}
	return strings.ToLower(k)
}

func defaultPort(typ string) int {
	if typ == Postgres {
		return 5432
	}
	return 3306
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// SealContext is what a datasource's sealed password is bound to: a value
// sealed for one datasource does not open as another's.
func SealContext(name string) string { return "datasource/" + name }

// Dialect says how a statement spells bind parameters.
type Dialect struct {
	Type string
}

// Placeholder returns the n-th (1-based) bind parameter of the dialect.
func (d Dialect) Placeholder(n int) string {
	if d.Type == Postgres {
		return "$" + strconv.Itoa(n)
	}
	return "?"
}

// Open returns a handle on the datasource. Nothing is connected yet; the
// first statement (or Ping) connects.
func Open(c Config) (*sql.DB, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	switch c.Type {
	case MySQL:
		mc, err := c.mysqlConfig()
		if err != nil {
			return nil, err
		}
		conn, err := gomysql.NewConnector(mc)
		if err != nil {
			return nil, redact(fmt.Errorf("mysql datasource: %w", err), c.Password)
		}
		return sql.OpenDB(conn), nil
	case Postgres:
		pc, err := c.pgConfig()
		if err != nil {
			return nil, err
		}
		return stdlib.OpenDB(*pc), nil
	default: // SQLite
		q := url.Values{}
		for k, v := range c.Params {
			q.Set(k, v)
		}
		if _, ok := c.Params["_pragma"]; !ok {
			q.Set("_pragma", "busy_timeout(10000)")
		}
		// A file: URI, so that the path is taken as a path whatever it
		// holds, and the params reach the driver (_pragma, _txlock) and
		// SQLite (mode, immutable).
		db, err := sqlitedriver.Open((&url.URL{Scheme: "file", Path: c.Database, RawQuery: q.Encode()}).String())
		if err != nil {
			return nil, fmt.Errorf("sqlite datasource: %w", err)
		}
		return db, nil
	}
}

func (c Config) mysqlConfig() (*gomysql.Config, error) {
	q := url.Values{}
	for k, v := range c.Params {
		q.Set(k, v)
	}
	// Parse only the parameters, so that their checks apply; user and
	// password are set on the config, never spelled in a DSN.
	mc, err := gomysql.ParseDSN("/?" + q.Encode())
	if err != nil {
		return nil, fieldErr("params", "%s", redact(err, c.Password).Error())
	}
	mc.AllowAllFiles = false // and no file is registered: LOAD DATA LOCAL reads nothing of the worker's
	mc.Net = "tcp"
	mc.Addr = hostPort(c.Host, c.Port, 3306)
	mc.User, mc.Passwd, mc.DBName = c.User, c.Password, c.Database
	return mc, nil
}

func (c Config) pgConfig() (*pgx.ConnConfig, error) {
	u := url.URL{Scheme: "postgres", Host: hostPort(c.Host, c.Port, 5432), Path: "/" + c.Database}
	q := url.Values{}
	for k, v := range c.Params {
		q.Set(k, v)
	}
	u.RawQuery = q.Encode()
	pc, err := pgx.ParseConfig(u.String())
	if err != nil {
		return nil, fieldErr("params", "%s", redact(err, c.Password).Error())
	}
	pc.User, pc.Password = c.User, c.Password
	if c.Database == "" {
		pc.Database = c.User
	}
	// On a cancelled context (a task's timeout or kill) send the server a
	// cancel request at once, keeping the connection. (pgx's default also
	// cancels, as it closes the connection; this does not depend on it.)
	pc.BuildContextWatcherHandler = func(conn *pgconn.PgConn) ctxwatch.Handler {
		return &pgconn.CancelRequestContextWatcherHandler{Conn: conn, DeadlineDelay: 5 * time.Second}
	}
	return pc, nil
}

func hostPort(host string, port, def int) string {
	if port == 0 {
		port = def
	}
	if strings.Contains(host, ":") && !strings.HasPrefix(host, "[") {
		host = "[" + host + "]"
	}
	return host + ":" + strconv.Itoa(port)
}

// Test connects and runs a trivial query, answering the driver's error
// (password redacted) when that fails. A sqlite file must exist already:
// testing one does not create it.
func Test(ctx context.Context, c Config) error {
	if err := c.Validate(); err != nil {
		return err
	}
	if c.Type == SQLite {
		if _, err := os.Stat(c.Database); err != nil {
			return fmt.Errorf("sqlite datasource: %w", err)
		}
	}
	db, err := Open(c)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var one int
	if err := db.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return redact(fmt.Errorf("connect to %s datasource: %w", c.Type, err), c.Password)
	}
	return nil
}

// Redact returns err with every spelling of password in its message
// replaced; errors.Is and errors.As still see what it wraps.
func Redact(err error, password string) error { return redact(err, password) }

const redacted = "xxxxx"

func redact(err error, password string) error {
	if err == nil || password == "" {
		return err
	}
	msg := err.Error()
	for _, s := range []string{password, url.QueryEscape(password), url.PathEscape(password)} {
		msg = strings.ReplaceAll(msg, s, redacted)
	}
	if msg == err.Error() {
		return err
	}
	return &redactedError{msg: msg, err: err}
}

type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// IsFieldError reports whether err is a problem with the config's fields
// (the caller's fault) rather than with connecting.
func IsFieldError(err error) bool {
	var fe *FieldError
	return errors.As(err, &fe)
}
