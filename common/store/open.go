// Package store is Beluga's storage layer: gorm over MySQL/MariaDB,
// PostgreSQL or an embedded pure-Go SQLite file (one dialect_*.go each). Exported methods own their transactions;
// callers see only common/model types and the sentinel errors below.
package store

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
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
	d       *dialect
	log     *zap.Logger
	epoch   int64         // leader term of this view; see Term
	fenced  func()        // told when this view's term is found over; see OnFenced
	box     *secret.Box   // seals secret params; see WithSecrets
	ends    *finishes     // in-process waiters of instance ends; see InstanceWaitEnd
	queries *atomic.Int64 // read statements run; see Queries
	// rdb serves the reads of views (instance pages, lists, events) where
	// the dialect has a read pool of its own (SQLite's read-only
	// connections beside the one writer). Nil: db.
	rdb *gorm.DB
}

// read is the handle for a view's read outside any transaction.
func (s *Store) read(ctx context.Context) *gorm.DB {
	if s.rdb != nil {
		return s.rdb.WithContext(ctx)
	}
	return s.db.WithContext(ctx)
}

// ParseURL turns a database URL into a gorm dialector name and driver DSN.
// Accepted: mysql://user:pass@host:port/db?opts,
// postgres://user:pass@host:port/db?opts and sqlite:///abs/path.db or
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
	d := dialectFor(u.Scheme)
	if d == nil {
		return "", "", fmt.Errorf("database url %q: scheme must be %s", shown, schemeList())
	}
	dsn, err = d.dsn(u, shown)
	return d.name, dsn, err
}

// Open connects to the database at url. It does not migrate. Errors carry
// no password.
func Open(ctx context.Context, rawURL string, log *zap.Logger) (*Store, error) {
	s, err := open(ctx, rawURL, log)
	return s, redactErr(err, rawURL)
}

func open(ctx context.Context, rawURL string, log *zap.Logger) (*Store, error) {
	name, dsn, err := parseURL(rawURL)
	if err != nil {
		return nil, err
	}
	d := dialects[name]
	db, err := d.open(dsn)
	if err != nil {
		return nil, fmt.Errorf("open %s database: %w", name, err)
	}
	sqlDB, err := db.DB()
	if err != nil {
		return nil, fmt.Errorf("open %s database: %w", name, err)
	}
	if err := db.Use(&outboxSignal{c: make(chan struct{}, 1)}); err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("open %s database: %w", name, err)
	}
	if err := registerAuditCallback(db); err != nil {
		sqlDB.Close()
		return nil, err
	}
	queries := new(atomic.Int64)
	if err := registerReadCallback(db, queries); err != nil {
		sqlDB.Close()
		return nil, err
	}
	if err := sqlDB.PingContext(ctx); err != nil {
		sqlDB.Close()
		return nil, fmt.Errorf("connect %s database: %w", name, err)
	}
	st := &Store{db: db, d: d, log: log.Named("store"), ends: &finishes{}, queries: queries}
	if d.readers != nil {
		if st.rdb, err = d.readers(dsn); err == nil {
			err = registerReadCallback(st.rdb, queries)
		}
		if err != nil {
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
	if s.d.migrateLock != nil {
		// The lock belongs to a connection, so pin one for the whole
		// migration.
		conn, err := s.db.DB()
		if err != nil {
			return nil, err
		}
		c, err := conn.Conn(ctx)
		if err != nil {
			return nil, fmt.Errorf("migrate: %w", err)
		}
		defer c.Close()
		release, err := s.d.migrateLock(ctx, c)
		if err != nil {
			return nil, fmt.Errorf("migrate: %w", err)
		}
		defer release()
	}
	if err := db.Exec(`CREATE TABLE IF NOT EXISTS schema_version (version INT NOT NULL PRIMARY KEY, name VARCHAR(255) NOT NULL, applied_at VARCHAR(64) NOT NULL)`).Error; err != nil {
		return nil, fmt.Errorf("create schema_version: %w", err)
	}
	var current int
	if err := db.Raw(`SELECT COALESCE(MAX(version), 0) FROM schema_version`).Scan(&current).Error; err != nil {
		return nil, fmt.Errorf("read schema_version: %w", err)
	}
	migs, err := schema.For(s.d.name)
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

// isUniqueViolation recognises duplicate-key errors of every dialect.
func isUniqueViolation(err error) bool {
	if err == nil {
		return false
	}
	for _, d := range dialects {
		if d.uniqueViolation(err) {
			return true
		}
	}
	return false
}

func notFound(err error, what string) error {
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	return fmt.Errorf("%s: %w", what, err)
}
