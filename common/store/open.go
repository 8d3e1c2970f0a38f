// Package store is Beluga's storage layer: gorm over MySQL/MariaDB or an
// embedded pure-Go SQLite file. Exported methods own their transactions;
// callers see only common/model types and the sentinel errors below.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/glebarez/sqlite"
	gomysql "github.com/go-sql-driver/mysql"
	"go.uber.org/zap"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"

	"github.com/beluga-scheduler/beluga/common/secret"
	schema "github.com/beluga-scheduler/beluga/sql"
)

// Sentinel errors; test with errors.Is.
var (
	ErrNotFound = errors.New("not found")
	ErrConflict = errors.New("conflict")
)

// Store is the handle on the database.
type Store struct {
	db      *gorm.DB
	dialect string
	log     *zap.Logger
	epoch   int64       // leader term of this view; see Term
	box     *secret.Box // seals secret params; see WithSecrets
	ends    *finishes   // in-process waiters of instance ends; see WaitEnd
	// rdb serves the reads of views (instance pages, lists, events). On
	// SQLite it is a pool of read-only connections beside the one writing
	// connection: in WAL mode a reader reads the last commit while a write
	// goes on, so the API and the UI do not queue behind a run's writes, and
	// a read that starts after a commit sees it. Nil: db (MySQL's pool).
	rdb *gorm.DB
}

// read is the handle for a view's read outside any transaction.
func (s *Store) read(ctx context.Context) *gorm.DB {
	if s.rdb != nil {
		return s.rdb.WithContext(ctx)
	}
	return s.db.WithContext(ctx)
}

// Dialect is "mysql" or "sqlite".
func (s *Store) Dialect() string { return s.dialect }

// ParseURL turns a database URL into a gorm dialector name and driver DSN.
// Accepted: mysql://user:pass@host:port/db?opts and sqlite:///abs/path.db or
// sqlite://relative/path.db.
// Errors name the URL with its password redacted.
func ParseURL(raw string) (dialect, dsn string, err error) {
	dialect, dsn, err = parseURL(raw)
	return dialect, dsn, redactErr(err, raw)
}

func parseURL(raw string) (dialect, dsn string, err error) {
	shown := RedactURL(raw)
	u, err := url.Parse(raw)
	if err != nil {
		return "", "", fmt.Errorf("database url %q: %s", shown, urlParseProblem(err))
	}
	switch u.Scheme {
	case "sqlite", "sqlite3":
		p := u.Host + u.Path
		if p == "" {
			return "", "", fmt.Errorf("database url %q: sqlite needs a file path, e.g. sqlite:///var/lib/beluga/beluga.db", shown)
		}
		// Absolute: a relative path in the driver's file: URI would be
		// read as its host ("beluga-data" of the default data dir).
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", "", fmt.Errorf("database url %q: %w", shown, err)
		}
		return "sqlite", sqliteDSN(abs), nil
	case "mysql":
		c := gomysql.NewConfig()
		c.Net = "tcp"
		c.Addr = u.Host
		if u.Port() == "" {
			c.Addr = u.Host + ":3306"
		}
		c.User = u.User.Username()
		c.Passwd, _ = u.User.Password()
		c.DBName = strings.TrimPrefix(u.Path, "/")
		if c.DBName == "" {
			return "", "", fmt.Errorf("database url %q: mysql needs a database name, e.g. mysql://root@127.0.0.1:3306/beluga", shown)
		}
		c.ParseTime = true
		c.Loc = time.UTC
		c.InterpolateParams = true
		// Rows affected = rows matched, as in SQLite: a conditional update
		// that matches but changes no value (a re-sent report) still counts.
		c.ClientFoundRows = true
		c.Params = map[string]string{}
		for k, v := range u.Query() {
			c.Params[k] = v[0]
		}
		return "mysql", c.FormatDSN(), nil
	}
	return "", "", fmt.Errorf("database url %q: scheme must be mysql:// or sqlite://", shown)
}

// Open connects to the database at url. It does not migrate. Errors carry
// no password.
func Open(ctx context.Context, rawURL string, log *zap.Logger) (*Store, error) {
	s, err := open(ctx, rawURL, log)
	return s, redactErr(err, rawURL)
}

func open(ctx context.Context, rawURL string, log *zap.Logger) (*Store, error) {
	dialect, dsn, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	cfg := gormConfig()
	var db *gorm.DB
	switch dialect {
	case "sqlite":
		var conn *sql.DB
		if conn, err = openSQLite(dsn); err == nil {
			db, err = gorm.Open(&sqlite.Dialector{Conn: conn}, cfg)
		}
	case "mysql":
		db, err = gorm.Open(mysql.Open(dsn), cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("open %s database: %w", dialect, err)
	}
	if err := db.Use(&outboxSignal{c: make(chan struct{}, 1)}); err != nil {
		return nil, fmt.Errorf("open %s database: %w", dialect, err)
	}
	if err := registerAuditCallback(db); err != nil {
		return nil, err
	}
	if err := registerReadCallback(db); err != nil {
		return nil, err
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("open %s database: %w", dialect, err)
	}
	if dialect == "sqlite" {
		// One connection: SQLite allows one writer, and a single connection
		// turns lock contention into queueing instead of SQLITE_BUSY errors.
		sqlDB.SetMaxOpenConns(1)
	} else {
		sqlDB.SetMaxOpenConns(32)
		sqlDB.SetMaxIdleConns(16)
		sqlDB.SetConnMaxLifetime(time.Hour)
	}
	if err := sqlDB.PingContext(ctx); err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("connect %s database: %w", dialect, err)
	}
	st := &Store{db: db, dialect: dialect, log: log.Named("store"), ends: &finishes{}}
	if dialect == "sqlite" {
		if st.rdb, err = openSQLiteReader(dsn); err != nil {
			sqlDB.Close()
			return nil, err
		}
	}
	return st, nil
}

// gormConfig is a new gorm configuration: gorm keeps its callbacks and
// dialector in it, so each *gorm.DB needs its own.
func gormConfig() *gorm.Config {
	return &gorm.Config{
		Logger:                 logger.Discard,
		SkipDefaultTransaction: true,
		// No PrepareStmt: gorm's statement cache can deadlock when every
		// connection is held (SQLite has one) by a transaction waiting on a
		// statement another goroutine is preparing. SQLite's connections
		// keep their statements prepared themselves (stmtcache.go); MySQL
		// interpolates parameters client-side, saving the prepare round trip.
		NowFunc: func() time.Time { return time.Now().UTC() },
	}
}

// sqliteReaders is the size of SQLite's read pool: one per core here is
// what the API's concurrent views use; more would only queue on CPU.
const sqliteReaders = 2

// openSQLiteReader opens the read-only pool of the SQLite file of dsn.
func openSQLiteReader(dsn string) (*gorm.DB, error) {
	conn, err := openSQLite(sqliteReadOnly(dsn))
	if err != nil {
		return nil, fmt.Errorf("open sqlite readers: %w", err)
	}
	conn.SetMaxOpenConns(sqliteReaders)
	conn.SetMaxIdleConns(sqliteReaders)
	db, err := gorm.Open(&sqlite.Dialector{Conn: conn}, gormConfig())
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("open sqlite readers: %w", err)
	}
	if err := registerReadCallback(db); err != nil {
		conn.Close()
		return nil, err
	}
	return db, nil
}

// Close releases the connections.
func (s *Store) Close() error {
	if s.rdb != nil {
		if r, err := s.rdb.DB(); err == nil {
			r.Close()
		}
	}
	sqlDB, err := s.db.DB()
	if err != nil {
		return err
	}
	return sqlDB.Close()
}

// Migrate applies the schema files not yet applied, each in order, and
// records them in schema_version.
func (s *Store) Migrate(ctx context.Context) (applied []string, err error) {
	return s.migrate(ctx, math.MaxInt)
}

// migrate is Migrate of the files up to version upto.
func (s *Store) migrate(ctx context.Context, upto int) (applied []string, err error) {
	db := s.db.WithContext(ctx)
	if s.dialect == "mysql" {
		// Masters may start together: one migrates, the others wait on the
		// lock and then find nothing left to apply. The lock belongs to a
		// connection, so pin one for the whole migration.
		conn, err := s.db.DB()
		if err != nil {
			return nil, err
		}
		c, err := conn.Conn(ctx)
		if err != nil {
			return nil, fmt.Errorf("migrate: %w", err)
		}
		defer c.Close()
		var got int
		if err := c.QueryRowContext(ctx, `SELECT GET_LOCK('beluga_migrate', 60)`).Scan(&got); err != nil || got != 1 {
			return nil, fmt.Errorf("migrate: could not take the migration lock (got %d): %v", got, err)
		}
		defer c.ExecContext(context.Background(), `SELECT RELEASE_LOCK('beluga_migrate')`) //nolint:errcheck // released with the connection anyway
	}
	if err := db.Exec(`CREATE TABLE IF NOT EXISTS schema_version (version INT NOT NULL PRIMARY KEY, name VARCHAR(255) NOT NULL, applied_at VARCHAR(64) NOT NULL)`).Error; err != nil {
		return nil, fmt.Errorf("create schema_version: %w", err)
	}
	var current int
	if err := db.Raw(`SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&current).Error; err != nil {
		return nil, fmt.Errorf("read schema_version: %w", err)
	}
	migs, err := schema.For(s.dialect)
	if err != nil {
		return nil, err
	}
	for _, m := range migs {
		if m.Version <= current || m.Version > upto {
			continue
		}
		// MySQL commits DDL implicitly, so a failed file is reported with the
		// statement that failed rather than rolled back.
		for _, stmt := range schema.Statements(m.SQL) {
			if err := db.Exec(stmt).Error; err != nil {
				return applied, fmt.Errorf("apply %s: %w\nstatement: %s", m.Name, err, firstLine(stmt))
			}
		}
		if err := db.Exec(`INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)`,
			m.Version, m.Name, time.Now().UTC().Format(time.RFC3339)).Error; err != nil {
			return applied, fmt.Errorf("record %s: %w", m.Name, err)
		}
		applied = append(applied, m.Name)
		s.log.Info("schema applied", zap.String("file", m.Name))
	}
	return applied, nil
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

// isUniqueViolation recognises duplicate-key errors of both dialects.
func isUniqueViolation(err error) bool {
	if err == nil {
		return false
	}
	var me *gomysql.MySQLError
	if errors.As(err, &me) && me.Number == 1062 {
		return true
	}
	return strings.Contains(err.Error(), "UNIQUE constraint failed")
}

func notFound(err error, what string) error {
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	return fmt.Errorf("%s: %w", what, err)
}
