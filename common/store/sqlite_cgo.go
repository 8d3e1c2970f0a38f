//go:build beluga_sqlite_cgo

package store

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"net/url"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// The opt-in cgo build (-tags beluga_sqlite_cgo, CGO_ENABLED=1) links
// SQLite's C library through mattn/go-sqlite3, with the same statement
// cache, settings and time text as the default pure-Go build.

func sqliteDSN(path string) string {
	q := url.Values{}
	q.Set("_busy_timeout", "10000")
	q.Set("_journal_mode", "WAL")
	q.Set("_synchronous", "NORMAL")
	q.Set("_foreign_keys", "0")
	q.Set("_txlock", "immediate")
	return (&url.URL{Scheme: "file", Path: path, RawQuery: q.Encode()}).String()
}

func sqliteReadOnly(dsn string) string { return dsn + "&_query_only=1" }

func openSQLite(dsn string) (*sql.DB, error) {
	return sql.OpenDB(cachingConnector{dsnConnector{dsn}}), nil
}

// dsnConnector opens mattn connections (its driver has no connector).
type dsnConnector struct{ dsn string }

func (c dsnConnector) Connect(context.Context) (driver.Conn, error) {
	return (&sqlite3.SQLiteDriver{}).Open(c.dsn)
}

func (c dsnConnector) Driver() driver.Driver { return &sqlite3.SQLiteDriver{} }
