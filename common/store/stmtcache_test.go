package store

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// The same statement run again while its rows are open gets a statement of
// its own, and the cache stays within its bound.
func TestStmtCacheNestedAndBounded(t *testing.T) {
	ctx := context.Background()
	db, err := openSQLite(sqliteDSN(filepath.Join(t.TempDir(), "c.db")))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (x INT); INSERT INTO t VALUES (1), (2), (3)`); err != nil {
		t.Fatal(err)
	}
	const q = `SELECT x FROM t WHERE x >= ? ORDER BY x`
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	outer, err := tx.QueryContext(ctx, q, 1)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for outer.Next() {
		var x int
		if err := outer.Scan(&x); err != nil {
			t.Fatal(err)
		}
		inner, err := tx.QueryContext(ctx, q, x)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for inner.Next() {
			n++
		}
		if err := inner.Close(); err != nil {
			t.Fatal(err)
		}
		got = append(got, fmt.Sprintf("%d:%d", x, n))
	}
	if err := outer.Err(); err != nil {
		t.Fatal(err)
	}
	outer.Close()
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[1:3 2:2 3:1]" {
		t.Fatalf("nested reads of one statement: %v, want [1:3 2:2 3:1]", got)
	}

	for i := range stmtCacheSize + 10 {
		if _, err := db.ExecContext(ctx, fmt.Sprintf(`UPDATE t SET x = x WHERE x = ? + %d`, i), 0); err != nil {
			t.Fatal(err)
		}
	}
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.Raw(func(dc any) error {
		cc := dc.(*cachingConn)
		if n := cc.lru.Len(); n != stmtCacheSize || len(cc.byQuery) != n {
			return fmt.Errorf("cache holds %d statements (%d by text), want %d", n, len(cc.byQuery), stmtCacheSize)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
