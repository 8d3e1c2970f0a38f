package sql

import (
	"context"
	dbsql "database/sql"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/beluga-scheduler/beluga/common/datasource"
	"github.com/beluga-scheduler/beluga/common/params"
	"github.com/beluga-scheduler/beluga/common/secret"
	"github.com/beluga-scheduler/beluga/common/tasktype"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
)

// maxCell bounds one value in the logged table.
const maxCell = 256

// run runs the statements of p on cfg, a connection the worker checked
// and opened the password of (input).
func run(ctx context.Context, p *Payload, cfg datasource.Config, log io.Writer) tasktype.Outcome {
	outs, err := runStatements(ctx, p, cfg, log)
	if err != nil && ctx.Err() != nil {
		err = fmt.Errorf("%w (the statement was cancelled on the server)", err)
	}
	return tasktype.Outcome{Outputs: outs, Err: datasource.Redact(err, cfg.Password)}
}

// connConfig opens the sealed password with the worker's key.
func connConfig(d tasktype.Datasource, keyFile string) (datasource.Config, error) {
	c := datasource.Config{Type: d.Type, Host: d.Host, Port: d.Port, Database: d.Database, User: d.User, Params: d.Params}
	if d.PasswordSealed == "" {
		return c, nil
	}
	if keyFile == "" {
		return c, fmt.Errorf("datasource %q has a password and this worker has no secret key to open it: start the worker with --secret-key-file (env BELUGA_SECRET_KEY_FILE), the key file of the API servers", d.Name)
	}
	box, err := loadKey(keyFile)
	if err != nil {
		return c, err
	}
	if c.Password, err = box.OpenFor(d.PasswordSealed, datasource.SealContext(d.Name)); err != nil {
		return c, fmt.Errorf("datasource %q: %w", d.Name, err)
	}
	return c, nil
}

var (
	keysMu sync.Mutex
	keys   = map[string]*secret.Box{}
)

// loadKey reads a key file once per worker process.
func loadKey(path string) (*secret.Box, error) {
	keysMu.Lock()
	defer keysMu.Unlock()
	if b, ok := keys[path]; ok {
		return b, nil
	}
	b, _, err := secret.LoadKeyFile(path)
	if err != nil {
		return nil, err
	}
	keys[path] = b
	return b, nil
}

func runStatements(ctx context.Context, p *Payload, cfg datasource.Config, log io.Writer) (map[string]string, error) {
	db, err := datasource.Open(cfg)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	start := time.Now()
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect to %s datasource %q: %w", cfg.Type, p.Datasource.Name, err)
	}
	defer conn.Close()
	fmt.Fprintf(log, "connected to %s datasource %s in %s\n", cfg.Type, p.Datasource.Name, time.Since(start).Round(time.Millisecond))
	if cfg.Type == datasource.SQLite {
		// No interrupt of our own: the driver interrupts the engine when
		// the context ends, while rows are stepped too.
		if err := sqliteNoAttach(conn); err != nil {
			return nil, fmt.Errorf("sqlite datasource %q: %w; not running its statements", p.Datasource.Name, err)
		}
	}
	if cfg.Type == datasource.MySQL {
		// The MySQL driver only drops the socket on a cancelled context;
		// the server would go on running the statement. Kill it there.
		var id int64
		if err := conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
			return nil, fmt.Errorf("mysql connection id: %w", err)
		}
		what := fmt.Sprintf("KILL QUERY %d", id)
		defer cancelOnServer(ctx, log, what, cfg.Password, func(kctx context.Context) error {
			_, err := db.ExecContext(kctx, "KILL QUERY "+strconv.FormatInt(id, 10))
			return err
		})()
	}
	if cfg.Type == datasource.Postgres {
		// The driver's own cancel request on a cancelled context is sent
		// by a goroutine of its own, which a child process ending at once
		// would never run: send it here, and return only once it went.
		var pg *pgconn.PgConn
		if err := conn.Raw(func(dc any) error {
			c, ok := dc.(*stdlib.Conn)
			if !ok {
				return fmt.Errorf("unexpected postgres driver connection %T", dc)
			}
			pg = c.Conn().PgConn()
			return nil
		}); err != nil {
			return nil, err
		}
		what := fmt.Sprintf("cancel request for backend %d", pg.PID())
		defer cancelOnServer(ctx, log, what, cfg.Password, pg.CancelRequest)()
	}

	var q querier = conn
	var tx *dbsql.Tx
	if p.Transaction && len(p.Statements) > 1 {
		if tx, err = conn.BeginTx(ctx, nil); err != nil {
			return nil, fmt.Errorf("begin transaction: %w", err)
		}
		defer tx.Rollback() //nolint:errcheck // a no-op after Commit
		q = tx
		fmt.Fprintf(log, "running %d statements in one transaction\n", len(p.Statements))
	}
	var outs map[string]string
	for i, st := range p.Statements {
		where := "sql"
		if len(p.Statements) > 1 {
			where = fmt.Sprintf("sql statement %d", i+1)
		}
		fmt.Fprintf(log, "\n-- %s", where)
		if len(st.Args) > 0 {
			fmt.Fprintf(log, " (%d bind parameters)", len(st.Args))
		}
		fmt.Fprintf(log, "\n%s\n", st.SQL)
		t0 := time.Now()
		first, err := runOne(ctx, q, st, log)
		if err != nil {
			if tx != nil {
				fmt.Fprintln(log, "rolled back")
			}
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		fmt.Fprintf(log, "(%s)\n", time.Since(t0).Round(time.Millisecond))
		for k, v := range first {
			if outs == nil {
				outs = map[string]string{}
			}
			outs[k] = v
		}
	}
	if tx != nil {
		if err := tx.Commit(); err != nil {
			return nil, fmt.Errorf("commit: %w", err)
		}
		fmt.Fprintln(log, "committed")
	}
	return outs, nil
}

// runOne runs one statement: one that returns rows logs them as a table
// and gives its first row as outputs; others log the rows affected.
func runOne(ctx context.Context, q querier, st Statement, log io.Writer) (map[string]string, error) {
	if !returnsRows(st.SQL) {
		res, err := q.ExecContext(ctx, st.SQL, anyArgs(st.Args)...)
		if err != nil {
			return nil, err
		}
		if n, err := res.RowsAffected(); err == nil {
			fmt.Fprintf(log, "%d rows affected\n", n)
		} else {
			fmt.Fprintln(log, "done")
		}
		return nil, nil
	}
	rows, err := q.QueryContext(ctx, st.SQL, anyArgs(st.Args)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	if len(cols) == 0 {
		fmt.Fprintln(log, "done (no result set)")
		return nil, rows.Err()
	}
	tw := tabwriter.NewWriter(log, 1, 4, 1, ' ', tabwriter.Debug)
	fmt.Fprintln(tw, strings.Join(cols, "\t"))
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var first map[string]string
	n, more := 0, false
	for rows.Next() {
		if n == MaxLoggedRows {
			more = true
			break
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		cells := make([]string, len(cols))
		for i, v := range vals {
			cells[i] = cell(v)
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t"))
		if n == 0 {
			first = firstRow(cols, vals, log)
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	tw.Flush()
	switch {
	case more:
		fmt.Fprintf(log, "(first %d rows shown; more not read)\n", MaxLoggedRows)
	case n == 1:
		fmt.Fprintln(log, "(1 row)")
	default:
		fmt.Fprintf(log, "(%d rows)\n", n)
	}
	if n == 0 {
		fmt.Fprintln(log, "no rows: no outputs from this statement")
	}
	return first, nil
}

// firstRow makes outputs of the first row. A column whose name is not an
// identifier (count(*)) is left out, and the log says how to name it.
func firstRow(cols []string, vals []any, log io.Writer) map[string]string {
	out := make(map[string]string, len(cols))
	for i, c := range cols {
		if !params.IsName(c) {
			fmt.Fprintf(log, "column %q is not an output: not an identifier (name it with AS)\n", c)
			continue
		}
		out[c] = value(vals[i])
	}
	return out
}

// returnsRows says whether a statement is run as a query: by its first
// keyword, or a RETURNING clause.
func returnsRows(q string) bool {
	s := strings.TrimLeft(stripComments(q), " \t\r\n(")
	word := ""
	if f := strings.FieldsFunc(s, func(r rune) bool { return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') }); len(f) > 0 {
		word = strings.ToUpper(f[0])
	}
	switch word {
	case "SELECT", "WITH", "SHOW", "DESCRIBE", "DESC", "EXPLAIN", "VALUES", "TABLE", "PRAGMA":
		return true
	}
	return strings.Contains(strings.ToUpper(s), "RETURNING")
}

// stripComments drops leading -- and /* */ comments.
func stripComments(q string) string {
	for {
		q = strings.TrimLeft(q, " \t\r\n")
		switch {
		case strings.HasPrefix(q, "--"):
			i := strings.IndexByte(q, '\n')
			if i < 0 {
				return ""
			}
			q = q[i+1:]
		case strings.HasPrefix(q, "/*"):
			i := strings.Index(q, "*/")
			if i < 0 {
				return ""
			}
			q = q[i+2:]
		default:
			return q
		}
	}
}

// value is a result value as an output: NULL is "".
func value(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case []byte:
		return string(x)
	case string:
		return x
	case time.Time:
		return x.Format(time.RFC3339Nano)
	case int64:
		return strconv.FormatInt(x, 10)
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(x)
	}
	return fmt.Sprint(v)
}

// cell is a value as the log shows it: on one line, clipped.
func cell(v any) string {
	if v == nil {
		return "NULL"
	}
	s := strings.NewReplacer("\n", `\n`, "\r", `\r`, "\t", `\t`).Replace(value(v))
	if utf8.RuneCountInString(s) > maxCell {
		r := []rune(s)
		s = string(r[:maxCell]) + "..."
	}
	return s
}

// cancelOnServer runs cancel (what names it in the log) when ctx ends
// before the returned stop is called; stop returns once a cancel begun
// has been sent, so a child process ending right after still sent it.
func cancelOnServer(ctx context.Context, log io.Writer, what, password string, cancel func(context.Context) error) (stop func()) {
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case <-ctx.Done():
			kctx, end := context.WithTimeout(context.Background(), 5*time.Second)
			defer end()
			if err := cancel(kctx); err != nil {
				fmt.Fprintf(log, "cancel on the server (%s) failed: %v\n", what, datasource.Redact(err, password))
			} else {
				fmt.Fprintf(log, "cancelled on the server (%s)\n", what)
			}
		case <-quit:
		}
	}()
	return func() { close(quit); <-done }
}
