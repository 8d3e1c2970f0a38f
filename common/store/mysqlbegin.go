package store

import (
	"context"
	"database/sql/driver"
	"errors"
)

// On MySQL a transaction's START TRANSACTION travels with its first
// statement, in one packet (the connection allows several statements per
// query): one round trip less per transaction, and every write of the
// scheduler is a transaction. The server runs the two in order, as it
// would run them sent apart. A transaction that sends nothing sends no
// COMMIT either.

// lazyBeginConnector wraps the MySQL driver's connector so that each
// connection begins its transactions lazily.
type lazyBeginConnector struct{ driver.Connector }

func (c lazyBeginConnector) Connect(ctx context.Context) (driver.Conn, error) {
	dc, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	inner, ok := dc.(mysqlConn)
	if !ok {
		dc.Close()
		return nil, errors.New("mysql driver connection lacks the methods a lazy begin needs")
	}
	return &lazyBeginConn{mysqlConn: inner}, nil
}

// mysqlConn is what the MySQL driver's connection provides and the wrapper
// passes on.
type mysqlConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.ExecerContext
	driver.QueryerContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
	driver.NamedValueChecker
}

// lazyBeginConn is one connection; database/sql hands it to one goroutine
// at a time, so its state needs no lock.
type lazyBeginConn struct {
	mysqlConn
	pending bool // a transaction has begun here, its START TRANSACTION not yet sent
	open    bool // a transaction is open (begun, not ended)
}

const startTx = "START TRANSACTION"

var _ mysqlConn = (*lazyBeginConn)(nil)

// BeginTx begins lazily a transaction of the default options; others
// (isolation, read-only) begin at once through the driver.
func (c *lazyBeginConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if c.open {
		return nil, errors.New("begin: a transaction is already open on this connection")
	}
	if opts.Isolation != driver.IsolationLevel(0) || opts.ReadOnly {
		return c.mysqlConn.BeginTx(ctx, opts)
	}
	c.pending, c.open = true, true
	return lazyTx{c}, nil
}

func (c *lazyBeginConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

// begin sends a pending START TRANSACTION on its own, before a statement
// that cannot carry it.
func (c *lazyBeginConn) begin(ctx context.Context) error {
	if !c.pending {
		return nil
	}
	c.pending = false
	_, err := c.mysqlConn.ExecContext(ctx, startTx, nil)
	return err
}

func (c *lazyBeginConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	if !c.pending {
		return c.mysqlConn.ExecContext(ctx, q, args)
	}
	res, err := c.mysqlConn.ExecContext(ctx, startTx+"; "+q, args)
	if errors.Is(err, driver.ErrSkip) { // nothing was sent: database/sql prepares q instead
		if err := c.begin(ctx); err != nil {
			return nil, err
		}
		return nil, driver.ErrSkip
	}
	c.pending = false // sent: the server began the transaction, whatever q did
	return res, err
}

func (c *lazyBeginConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	if !c.pending {
		return c.mysqlConn.QueryContext(ctx, q, args)
	}
	rows, err := c.mysqlConn.QueryContext(ctx, startTx+"; "+q, args)
	if errors.Is(err, driver.ErrSkip) {
		if err := c.begin(ctx); err != nil {
			return nil, err
		}
		return nil, driver.ErrSkip
	}
	c.pending = false
	return rows, err
}

func (c *lazyBeginConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	if err := c.begin(ctx); err != nil {
		return nil, err
	}
	return c.mysqlConn.PrepareContext(ctx, q)
}

func (c *lazyBeginConn) Prepare(q string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), q)
}

// ResetSession refuses a connection given back with a transaction open
// (database/sql ends every transaction first; this would be a bug).
func (c *lazyBeginConn) ResetSession(ctx context.Context) error {
	if c.open {
		return driver.ErrBadConn
	}
	return c.mysqlConn.ResetSession(ctx)
}

// lazyTx ends a lazily begun transaction: nothing to send if it never began
// on the server.
type lazyTx struct{ c *lazyBeginConn }

func (t lazyTx) Commit() error   { return t.end("COMMIT") }
func (t lazyTx) Rollback() error { return t.end("ROLLBACK") }

func (t lazyTx) end(q string) error {
	c := t.c
	c.open = false
	if c.pending {
		c.pending = false
		return nil
	}
	_, err := c.mysqlConn.ExecContext(context.Background(), q, nil)
	return err
}
