package store

import (
	"context"
	"database/sql"
	"net/url"
	"sort"
	"strings"

	"gorm.io/gorm"
)

// dialect is what the store's code needs to know of one database: how to
// reach it and how its SQL differs. Each dialect is declared in its own
// file (dialect_*.go) and registered in dialects; nothing outside those
// files and the dialect's migrations (sql/<name>) names a database.
type dialect struct {
	name    string   // gorm's dialector name; sql/<name> holds its migrations
	schemes []string // URL schemes that select it
	// dsn turns a parsed URL into the driver's DSN; shown is the URL with
	// its password redacted, for errors.
	dsn func(u *url.URL, shown string) (string, error)
	// open returns the handle on dsn, its connection pool sized.
	open func(dsn string) (*gorm.DB, error)
	// readers opens a separate read pool for views (nil: views read
	// through the writing pool).
	readers func(dsn string) (*gorm.DB, error)
	// serialWrites: one connection writes and transactions run one at a
	// time (BEGIN IMMEDIATE), so no read in one needs a lock.
	serialWrites bool
	// shareLock ends a read that must hold a shared lock on its row until
	// commit (the fence), ordering the transaction against TermBegin.
	shareLock string
	// placeholders: the driver takes "?" parameters, so a batch may send
	// statements to the transaction's connection without gorm.
	placeholders bool
	// prepareBatches: a batch prepares its statements once per transaction
	// (from prepareFrom rows); false sends them as they are.
	prepareBatches bool
	// conflictClause is put after INSERT or UPDATE of multi-row writes.
	conflictClause string
	// migrateLock takes a lock on c that keeps other masters from migrating
	// at the same time (nil: the database serializes writers anyway);
	// release frees it.
	migrateLock func(ctx context.Context, c *sql.Conn) (release func(), err error)
	// uniqueViolation recognises the driver's duplicate-key error.
	uniqueViolation func(err error) bool
	// abortsOnError: a failed statement aborts the rest of its transaction,
	// so one whose failure is expected runs in a savepoint (mayFail).
	abortsOnError bool
	// writers is how many transactions may usefully write at once.
	writers int
	// msBetween is an SQL expression of the milliseconds from column from
	// to column to (both DATETIME), NULL when either is.
	msBetween func(from, to string) string
}

// dialects are the known dialects by name; each dialect_*.go adds its own.
var dialects = map[string]*dialect{}

func register(d *dialect) { dialects[d.name] = d }

// dialectOf is the dialect of tx's database.
func dialectOf(tx *gorm.DB) *dialect { return dialects[tx.Dialector.Name()] }

// dialectFor is the dialect a URL scheme selects.
func dialectFor(scheme string) *dialect {
	for _, d := range dialects {
		for _, s := range d.schemes {
			if s == scheme {
				return d
			}
		}
	}
	return nil
}

// schemeList is the accepted schemes for errors: "mysql://, postgres:// or sqlite://".
func schemeList() string {
	var ss []string
	for _, d := range dialects {
		ss = append(ss, d.schemes[0]+"://")
	}
	sort.Strings(ss)
	if len(ss) < 2 {
		return strings.Join(ss, "")
	}
	return strings.Join(ss[:len(ss)-1], ", ") + " or " + ss[len(ss)-1]
}

// Capabilities: what callers may ask of the store instead of its dialect.

// WriteConcurrency is how many transactions may usefully write at once:
// more writers than this only queue on the database's lock.
func (s *Store) WriteConcurrency() int { return s.d.writers }

// SerialWrites reports whether writing transactions run one at a time
// (one writing connection): a write sees no concurrent writer.
func (s *Store) SerialWrites() bool { return s.d.serialWrites }

// mayFail runs fn, whose failure the transaction survives (a duplicate key
// that means "already done"): in a savepoint where an error would abort
// the whole transaction, else as it is (MySQL and SQLite undo the failed
// statement only).
func mayFail(tx *gorm.DB, fn func(tx *gorm.DB) error) error {
	if !dialectOf(tx).abortsOnError {
		return fn(tx)
	}
	return tx.Transaction(fn)
}
