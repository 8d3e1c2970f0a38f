package store

import (
	"context"
	"database/sql"

	"gorm.io/gorm"
)

// prepareFrom is the batch size from which statements are prepared once per
// transaction on MySQL: for a few rows a prepare would cost one more round
// trip than it saves. SQLite's connections keep their statements prepared
// (stmtcache.go): there a batch sends its statements straight to the
// transaction, without gorm's statement building.
const prepareFrom = 4

// batch runs the same few statements many times in one transaction.
type batch struct {
	ctx   context.Context
	tx    *gorm.DB
	sqlTx *sql.Tx              // nil: send statements through gorm
	stmts map[string]*sql.Stmt // nil: send to sqlTx unprepared
}

func newBatch(ctx context.Context, tx *gorm.DB, rows int) *batch {
	b := &batch{ctx: ctx, tx: tx}
	t, ok := tx.Statement.ConnPool.(*sql.Tx)
	d := dialectOf(tx)
	switch {
	case !ok || !d.placeholders:
	case !d.prepareBatches:
		b.sqlTx = t
	case rows >= prepareFrom:
		b.sqlTx, b.stmts = t, map[string]*sql.Stmt{}
	}
	return b
}

// exec runs q and returns the rows it changed.
func (b *batch) exec(q string, args ...any) (int64, error) {
	if b.sqlTx == nil {
		res := b.tx.Exec(q, args...)
		return res.RowsAffected, res.Error
	}
	if b.stmts == nil || folded(q) { // a folded statement runs once per transaction: preparing it costs two more round trips
		res, err := b.sqlTx.ExecContext(b.ctx, q, args...)
		if err != nil {
			return 0, err
		}
		return res.RowsAffected()
	}
	st := b.stmts[q]
	if st == nil {
		var err error
		if st, err = b.sqlTx.PrepareContext(b.ctx, q); err != nil {
			return 0, err
		}
		b.stmts[q] = st
	}
	res, err := st.ExecContext(b.ctx, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// close releases the prepared statements (before the transaction ends).
func (b *batch) close() {
	for _, st := range b.stmts {
		st.Close()
	}
}
