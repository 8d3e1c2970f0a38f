package store

import (
	"context"
	"database/sql"

	"gorm.io/gorm"
)

// prepareFrom is the batch size from which statements are prepared once per
// transaction: SQLite otherwise parses every statement again, while for a
// few rows a MySQL prepare would cost one more round trip than it saves.
const prepareFrom = 4

// batch runs the same few statements many times in one transaction.
type batch struct {
	ctx   context.Context
	tx    *gorm.DB
	sqlTx *sql.Tx // nil: send statements as they are
	stmts map[string]*sql.Stmt
}

func newBatch(ctx context.Context, tx *gorm.DB, rows int) *batch {
	b := &batch{ctx: ctx, tx: tx}
	if t, ok := tx.Statement.ConnPool.(*sql.Tx); ok && rows >= prepareFrom {
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
