package store

// SQLite is one engine for the store, the datasources and the sql task:
// github.com/ncruces/go-sqlite3 (SQLite built to wasm and translated to
// Go: no cgo), through its gorm dialector (gormlite). Its connections are
// interrupted when their context ends, rows being stepped included, and
// expose the engine's handle for limits and the authorizer.

import (
	"database/sql"
	"fmt"
	"net/url"

	"github.com/ncruces/go-sqlite3/driver"
)

// sqliteTimeFormat is how times are written as text: the layout of the
// driver used before (existing files hold it), ordered as text for
// UTC values, so comparisons in SQL stay right.
const sqliteTimeFormat = "2006-01-02 15:04:05.999999999-07:00"

// sqliteDSN is the driver's DSN for the database file at path: WAL with
// synchronous=NORMAL (a commit is durable at the next checkpoint, and a
// crash never corrupts), a busy timeout, no foreign key enforcement, and
// writing transactions that begin with BEGIN IMMEDIATE.
func sqliteDSN(path string) string {
	q := url.Values{}
	q.Set("_txlock", "immediate")
	q.Set("_timefmt", sqliteTimeFormat)
	s := (&url.URL{Scheme: "file", Path: path, RawQuery: q.Encode()}).String()
	// Order matters to the driver: busy_timeout first.
	for _, p := range []string{"busy_timeout(10000)", "journal_mode(WAL)", "synchronous(NORMAL)", "foreign_keys(0)"} {
		s += "&_pragma=" + url.QueryEscape(p)
	}
	return s
}

// sqliteReadOnly is dsn for connections that refuse to write.
func sqliteReadOnly(dsn string) string { return dsn + "&_pragma=" + url.QueryEscape("query_only(1)") }

// openSQLite opens dsn with the statement cache on each connection.
func openSQLite(dsn string) (*sql.DB, error) {
	c, err := (&driver.SQLite{}).OpenConnector(dsn)
	if err != nil {
		return nil, fmt.Errorf("sqlite dsn: %w", err)
	}
	return sql.OpenDB(cachingConnector{c}), nil
}
