package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"gorm.io/driver/postgres"
	"gorm.io/gorm"
)

// PostgreSQL (READ COMMITTED, pgx): concurrent writers like MySQL; reads
// that decide a write lock their rows (FOR UPDATE), the fence row is read
// FOR SHARE, and an error aborts the rest of its transaction (a statement
// whose failure is expected runs in a savepoint, see mayFail).
func init() {
	register(&dialect{
		name:            "postgres",
		schemes:         []string{"postgres", "postgresql"},
		dsn:             postgresDSN,
		open:            openPooled(func(dsn string) gorm.Dialector { return postgres.Open(dsn) }),
		shareLock:       " FOR SHARE",
		abortsOnError:   true,
		migrateLock:     postgresMigrateLock,
		uniqueViolation: postgresUniqueViolation,
		writers:         4,
		msBetween: func(from, to string) string {
			return "CAST(EXTRACT(EPOCH FROM (" + to + " - " + from + ")) * 1000 AS BIGINT)"
		},
	})
}

// postgresDSN is the URL itself (pgx reads postgres:// URLs), with a
// database name required, and the session's time zone UTC: times are
// stored as TIMESTAMP (no zone) in UTC, as MySQL's DATETIME.
func postgresDSN(u *url.URL, shown string) (string, error) {
	if strings.TrimPrefix(u.Path, "/") == "" {
		return "", fmt.Errorf("database url %q: postgres needs a database name, e.g. postgres://postgres@127.0.0.1:5432/beluga", shown)
	}
	c := *u
	q := c.Query()
	if q.Get("timezone") == "" {
		q.Set("timezone", "UTC")
	}
	c.RawQuery = q.Encode()
	return c.String(), nil
}

// postgresMigrateLock: masters may start together; one migrates, the
// others wait on the advisory lock (held by the connection) and then find
// nothing left to apply.
func postgresMigrateLock(ctx context.Context, c *sql.Conn) (func(), error) {
	const key = 0x62656c756761 // "beluga"
	if _, err := c.ExecContext(ctx, `SELECT pg_advisory_lock($1)`, key); err != nil {
		return nil, fmt.Errorf("could not take the migration lock: %w", err)
	}
	return func() {
		c.ExecContext(context.Background(), `SELECT pg_advisory_unlock($1)`, key) //nolint:errcheck // released with the connection anyway
	}, nil
}

func postgresUniqueViolation(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && pe.Code == "23505"
}
