package store

import (
	"fmt"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/ncruces/go-sqlite3/gormlite"
	"gorm.io/gorm"
)

// SQLite: an embedded file with one writing connection (BEGIN IMMEDIATE
// serializes writing transactions) and a read-only pool beside it.
func init() {
	register(&dialect{
		name:         "sqlite",
		schemes:      []string{"sqlite", "sqlite3"},
		dsn:          sqliteURLDSN,
		open:         openSQLiteWriter,
		readers:      openSQLiteReaders,
		serialWrites: true,
		placeholders: true,
		// FAIL, where the default ABORT makes SQLite keep a statement
		// journal to undo just the one statement (each a 64 KiB buffer
		// mapped and unmapped by the pure-Go allocator: 8 % of a small
		// transaction's CPU). An error fails the whole transaction here
		// anyway, which rolls back all of it.
		conflictClause: " OR FAIL",
		uniqueViolation: func(err error) bool {
			return strings.Contains(err.Error(), "UNIQUE constraint failed")
		},
		writers: 1,
		msBetween: func(from, to string) string {
			return "CAST(ROUND((julianday(" + to + ") - julianday(" + from + ")) * 86400000) AS INTEGER)"
		},
	})
}

func sqliteURLDSN(u *url.URL, shown string) (string, error) {
	p := u.Host + u.Path
	if p == "" {
		return "", fmt.Errorf("database url %q: sqlite needs a file path, e.g. sqlite:///var/lib/beluga/beluga.db", shown)
	}
	// Absolute: a relative path in the driver's file: URI would be
	// read as its host ("beluga-data" of the default data dir).
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("database url %q: %w", shown, err)
	}
	return sqliteDSN(abs), nil
}

func openSQLiteWriter(dsn string) (*gorm.DB, error) {
	conn, err := openSQLite(dsn)
	if err != nil {
		return nil, err
	}
	// One connection: SQLite allows one writer, and a single connection
	// turns lock contention into queueing instead of SQLITE_BUSY errors.
	conn.SetMaxOpenConns(1)
	return gorm.Open(gormlite.OpenDB(conn), gormConfig())
}

// sqliteReaders is the size of SQLite's read pool: one per core here is
// what the API's concurrent views use; more would only queue on CPU.
const sqliteReaders = 2

// openSQLiteReaders opens the read-only pool of the SQLite file of dsn: in
// WAL mode a reader reads the last commit while a write goes on, so the API
// and the UI do not queue behind a run's writes, and a read that starts
// after a commit sees it.
func openSQLiteReaders(dsn string) (*gorm.DB, error) {
	conn, err := openSQLite(sqliteReadOnly(dsn))
	if err != nil {
		return nil, fmt.Errorf("open sqlite readers: %w", err)
	}
	conn.SetMaxOpenConns(sqliteReaders)
	conn.SetMaxIdleConns(sqliteReaders)
	db, err := gorm.Open(gormlite.OpenDB(conn), gormConfig())
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("open sqlite readers: %w", err)
	}
	return db, nil
}
