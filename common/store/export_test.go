package store

import (
	"context"

	"gorm.io/gorm"
)

// RawColumn reads column of every row of table as the database holds it,
// for tests that check what is stored at rest.
func RawColumn(s *Store, table, column string) ([]string, error) {
	var out []*string
	if err := s.db.Table(table).Order("id").Pluck(column, &out).Error; err != nil {
		return nil, err
	}
	vals := make([]string, len(out))
	for i, v := range out {
		if v != nil {
			vals[i] = *v
		}
	}
	return vals, nil
}

// RawText reads column of every row of table as the text SQLite holds (no
// driver's time decoding).
func RawText(s *Store, table, column string) ([]string, error) {
	var out []string
	err := s.db.Raw(`SELECT CAST(` + column + ` AS TEXT) FROM ` + table + ` ORDER BY id`).Scan(&out).Error
	return out, err
}

// HoldWriteLock begins a writing transaction on s (BEGIN IMMEDIATE: the
// file's write lock) and keeps it until release is called.
func HoldWriteLock(s *Store) (release func(), err error) {
	tx := s.db.Begin()
	if tx.Error != nil {
		return nil, tx.Error
	}
	return func() { tx.Rollback() }, nil
}

// WritersInUse is how many of s's writing connections are taken.
func WritersInUse(s *Store) int {
	sqlDB, err := s.db.DB()
	if err != nil {
		return -1
	}
	return sqlDB.Stats().InUse
}

// SingleConn shrinks s's pool to one connection, for tests that read the
// MySQL session's counters or set its variables.
func SingleConn(s *Store) {
	sqlDB, _ := s.db.DB()
	sqlDB.SetMaxOpenConns(1)
	sqlDB.SetMaxIdleConns(1)
}

// SessionStatements is the count of statements the MySQL session's server
// handled, this one included (with SingleConn: every statement of s):
// Questions, which leaves out prepares and closes of prepared statements,
// plus those.
func SessionStatements(s *Store) (int64, error) {
	rows, err := s.db.Raw(`SHOW SESSION STATUS WHERE Variable_name IN ('Questions', 'Com_stmt_prepare', 'Com_stmt_close')`).Rows()
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var total int64
	for rows.Next() {
		var name string
		var n int64
		if err := rows.Scan(&name, &n); err != nil {
			return 0, err
		}
		total += n
	}
	return total, rows.Err()
}

// ExecRaw runs q on the store's writing connection outside any transaction
// (a setup of what an older version left in the database, a session setting).
func ExecRaw(s *Store, q string, args ...any) error { return s.db.Exec(q, args...).Error }

// FoldedExec runs q in a hot write's transaction of s's term with the term
// check folded in, then calls held before the commit.
func FoldedExec(s *Store, ctx context.Context, q string, args []any, held func()) error {
	return s.foldedTx(ctx, func(tx *gorm.DB, f *fold) error {
		q, args := f.add(q, args)
		res := tx.Exec(q, args...)
		if res.Error != nil {
			return res.Error
		}
		if err := f.settle(tx, res.RowsAffected); err != nil {
			return err
		}
		held()
		return nil
	})
}

// QueryInt runs q on s and scans its one integer.
func QueryInt(s *Store, q string, args ...any) (int64, error) {
	var n int64
	err := s.db.Raw(q, args...).Row().Scan(&n)
	return n, err
}

// QueryString runs q on s and scans its one string.
func QueryString(s *Store, q string, args ...any) (string, error) {
	var v string
	err := s.db.Raw(q, args...).Row().Scan(&v)
	return v, err
}

// MigrateUpTo applies the schema files up to version upto, for tests of an
// upgrade from that schema.
func MigrateUpTo(s *Store, ctx context.Context, upto int) ([]string, error) {
	return s.migrate(ctx, upto)
}

// SeqIsID says whether an event's public seq is its id on s (SQLite).
func SeqIsID(s *Store) bool { return s.seqIsID() }

// HaltAfterRuns makes a purge stop after deleting the instance rows, as a
// restart between its transactions would; it then returns ErrPurgeHalted.
func HaltAfterRuns(o PurgeOptions) PurgeOptions { o.haltAfterRuns = true; return o }

// ErrPurgeHalted is the error of a purge made with HaltAfterRuns.
var ErrPurgeHalted = errPurgeHalted
