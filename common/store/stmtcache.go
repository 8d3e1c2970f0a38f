package store

import (
	"container/list"
	"context"
	"database/sql/driver"
	"errors"
	"reflect"
	"time"
)

// The store's SQLite connections keep their prepared statements: SQLite
// spends more CPU parsing and planning the hot writes than running them,
// and database/sql prepares and closes a statement per call when the
// driver has no fast path for arguments. The cache belongs to one
// connection, which database/sql hands to one goroutine at a time, so it
// needs no lock.

// stmtCacheSize bounds the statements kept per connection: the hot path
// uses a few dozen, and IN lists of varying length make the rest.
const stmtCacheSize = 256

// cachingConnector wraps a driver's connector so that each connection
// caches its prepared statements.
type cachingConnector struct{ driver.Connector }

func (c cachingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	inner, ok := dc.(innerConn)
	if !ok {
		dc.Close()
		return nil, errors.New("sqlite driver connection lacks context methods")
	}
	return &cachingConn{innerConn: inner, lru: list.New(), byQuery: map[string]*list.Element{}}, nil
}

// innerConn is what the wrapped driver's connection must provide.
type innerConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
}

type cachingConn struct {
	innerConn
	lru     *list.List // of *cachedStmt, most recently used first
	byQuery map[string]*list.Element
}

type cachedStmt struct {
	query string
	st    driver.Stmt
	busy  bool // rows of it are open
}

var (
	_ driver.QueryerContext    = (*cachingConn)(nil)
	_ driver.NamedValueChecker = (*cachingConn)(nil)
)

// stmt returns the cached statement of q, preparing it if needed. A
// statement whose rows are still open is not shared: the caller gets a
// fresh one it must close (cached false).
func (c *cachingConn) stmt(ctx context.Context, q string) (cs *cachedStmt, cached bool, err error) {
	if e, ok := c.byQuery[q]; ok {
		cs = e.Value.(*cachedStmt)
		if !cs.busy {
			c.lru.MoveToFront(e)
			return cs, true, nil
		}
		st, err := c.innerConn.PrepareContext(ctx, q)
		return &cachedStmt{query: q, st: st}, false, err
	}
	st, err := c.innerConn.PrepareContext(ctx, q)
	if err != nil {
		return nil, false, err
	}
	cs = &cachedStmt{query: q, st: st}
	c.byQuery[q] = c.lru.PushFront(cs)
	for c.lru.Len() > stmtCacheSize {
		old := c.lru.Back()
		o := old.Value.(*cachedStmt)
		if o.busy {
			break // closed when its rows are
		}
		c.lru.Remove(old)
		delete(c.byQuery, o.query)
		o.st.Close()
	}
	return cs, true, nil
}

func (c *cachingConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	if len(args) == 0 {
		// Without arguments the driver runs the text directly, which also
		// allows several statements in one text (BEGIN, migrations).
		return c.innerConn.ExecContext(ctx, q, args)
	}
	cs, cached, err := c.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	if !cached {
		defer cs.st.Close()
	}
	return cs.st.(driver.StmtExecContext).ExecContext(ctx, args)
}

func (c *cachingConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	cs, cached, err := c.stmt(ctx, q)
	if err != nil {
		return nil, err
	}
	rs, err := cs.st.(driver.StmtQueryContext).QueryContext(ctx, args)
	if err != nil {
		if !cached {
			cs.st.Close()
		}
		return nil, err
	}
	cs.busy = true
	return &cachedRows{Rows: rs, c: c, cs: cs, cached: cached}, nil
}

// CheckNamedValue passes the values the driver binds itself and leaves
// the rest (named string types, Valuers) to database/sql's conversion.
func (c *cachingConn) CheckNamedValue(nv *driver.NamedValue) error {
	switch nv.Value.(type) {
	case bool, int64, float64, string, []byte, time.Time, nil:
		return nil
	}
	return driver.ErrSkip
}

// Close closes the cached statements, then the connection.
func (c *cachingConn) Close() error {
	for e := c.lru.Front(); e != nil; e = e.Next() {
		e.Value.(*cachedStmt).st.Close()
	}
	c.lru.Init()
	clear(c.byQuery)
	return c.innerConn.Close()
}

// cachedRows releases its statement on Close (a fresh one is closed).
type cachedRows struct {
	driver.Rows
	c      *cachingConn
	cs     *cachedStmt
	cached bool
	closed bool
}

func (r *cachedRows) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	err := r.Rows.Close()
	r.cs.busy = false
	if !r.cached {
		return errors.Join(err, r.cs.st.Close())
	}
	return err
}

// The column type methods database/sql and gorm use, passed through.

func (r *cachedRows) ColumnTypeDatabaseTypeName(i int) string {
	if t, ok := r.Rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return t.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

func (r *cachedRows) ColumnTypeNullable(i int) (nullable, ok bool) {
	if t, ok := r.Rows.(driver.RowsColumnTypeNullable); ok {
		return t.ColumnTypeNullable(i)
	}
	return false, false
}

func (r *cachedRows) ColumnTypeScanType(i int) reflect.Type {
	if t, ok := r.Rows.(driver.RowsColumnTypeScanType); ok {
		return t.ColumnTypeScanType(i)
	}
	return reflect.TypeFor[any]()
}
