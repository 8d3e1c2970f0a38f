package store

import (
	"context"
	"fmt"
	"sync/atomic"

	"gorm.io/gorm"
)

// Reads counts the statements a context's reads ran, the rows they
// returned and the write transactions it opened: what a test of a path
// checks to show that it does not grow with the data (a time would depend
// on the machine).
type Reads struct {
	Statements   atomic.Int64
	Rows         atomic.Int64
	Transactions atomic.Int64
}

type readsKey struct{}

// CountReads returns ctx carrying r: the store's queries with it add to r.
func CountReads(ctx context.Context) (context.Context, *Reads) {
	r := &Reads{}
	return context.WithValue(ctx, readsKey{}, r), r
}

// Queries is how many read statements (gorm queries and row reads) the
// store ran since it opened, whatever their context: what a test counts to
// show that a cost does not grow with the number of clients (N event
// streams are served by one poll, not N).
func (s *Store) Queries() int64 { return s.queries.Load() }

func registerReadCallback(db *gorm.DB, total *atomic.Int64) error {
	cb := db.Callback()
	count := func(db *gorm.DB) {
		total.Add(1)
		countReads(db)
	}
	if err := cb.Query().After("gorm:query").Register("beluga:reads", count); err != nil {
		return fmt.Errorf("register the read counter on query: %w", err)
	}
	if err := cb.Row().After("gorm:row").Register("beluga:reads", count); err != nil {
		return fmt.Errorf("register the read counter on row: %w", err)
	}
	return nil
}

func countReads(db *gorm.DB) {
	if db.Statement.Context == nil {
		return
	}
	if r, _ := db.Statement.Context.Value(readsKey{}).(*Reads); r != nil {
		r.Statements.Add(1)
		r.Rows.Add(db.Statement.RowsAffected)
	}
}

// countRows adds n rows read by hand (sql.Rows, not gorm's scan) to ctx's
// Reads.
func countRows(ctx context.Context, n int) {
	if r, _ := ctx.Value(readsKey{}).(*Reads); r != nil {
		r.Rows.Add(int64(n))
	}
}

// countTx counts a write transaction opened with ctx.
func countTx(ctx context.Context) {
	if r, _ := ctx.Value(readsKey{}).(*Reads); r != nil {
		r.Transactions.Add(1)
	}
}
