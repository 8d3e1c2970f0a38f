package store

import (
	"time"

	"github.com/glebarez/sqlite"
	"go.uber.org/zap"
	"gorm.io/gorm"
	"gorm.io/gorm/logger"
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

// OpenWithOldDriver opens the SQLite file at path with the driver the store
// used before its own (glebarez/modernc), for tests that files stay
// readable both ways.
func OpenWithOldDriver(path string) (*Store, error) {
	db, err := gorm.Open(sqlite.Open(path+"?_pragma=journal_mode(WAL)&_pragma=busy_timeout(10000)&_pragma=synchronous(NORMAL)&_txlock=immediate"),
		&gorm.Config{Logger: logger.Discard, SkipDefaultTransaction: true, NowFunc: func() time.Time { return time.Now().UTC() }})
	if err != nil {
		return nil, err
	}
	sqlDB, _ := db.DB()
	sqlDB.SetMaxOpenConns(1)
	return &Store{db: db, dialect: "sqlite", log: zap.NewNop(), ends: &finishes{}}, nil
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

// ExecRaw runs q on the store's writing connection, for tests that set up
// what an older version left in the database.
func ExecRaw(s *Store, q string, args ...any) error { return s.db.Exec(q, args...).Error }
