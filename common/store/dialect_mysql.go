package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"gorm.io/driver/mysql"
	"gorm.io/gorm"
)

// MySQL and MariaDB (InnoDB, READ COMMITTED): concurrent writers; reads
// that decide a write lock their rows, and the fence row is read in share
// mode.
func init() {
	register(&dialect{
		name:           "mysql",
		schemes:        []string{"mysql"},
		dsn:            mysqlDSN,
		open:           openPooled(func(dsn string) gorm.Dialector { return mysql.Open(dsn) }),
		shareLock:      " LOCK IN SHARE MODE",
		placeholders:   true,
		prepareBatches: true,
		migrateLock:    mysqlMigrateLock,
		uniqueViolation: func(err error) bool {
			var me *gomysql.MySQLError
			return errors.As(err, &me) && me.Number == 1062
		},
		writers: 4,
		msBetween: func(from, to string) string {
			return "TIMESTAMPDIFF(MICROSECOND, " + from + ", " + to + ") DIV 1000"
		},
	})
}

func mysqlDSN(u *url.URL, shown string) (string, error) {
	c := gomysql.NewConfig()
	c.Net = "tcp"
	c.Addr = u.Host
	if u.Port() == "" {
		c.Addr = u.Host + ":3306"
	}
	c.User = u.User.Username()
	c.Passwd, _ = u.User.Password()
	c.DBName = strings.TrimPrefix(u.Path, "/")
	if c.DBName == "" {
		return "", fmt.Errorf("database url %q: mysql needs a database name, e.g. mysql://root@127.0.0.1:3306/beluga", shown)
	}
	c.ParseTime = true
	c.Loc = time.UTC
	c.InterpolateParams = true
	// Rows affected = rows matched, as in SQLite: a conditional update
	// that matches but changes no value (a re-sent report) still counts.
	c.ClientFoundRows = true
	c.Params = map[string]string{}
	for k, v := range u.Query() {
		c.Params[k] = v[0]
	}
	return c.FormatDSN(), nil
}

// mysqlMigrateLock: masters may start together; one migrates, the others
// wait on the named lock and then find nothing left to apply.
func mysqlMigrateLock(ctx context.Context, c *sql.Conn) (func(), error) {
	var got int
	if err := c.QueryRowContext(ctx, `SELECT GET_LOCK('beluga_migrate', 60)`).Scan(&got); err != nil || got != 1 {
		return nil, fmt.Errorf("could not take the migration lock (got %d): %v", got, err)
	}
	return func() {
		c.ExecContext(context.Background(), `SELECT RELEASE_LOCK('beluga_migrate')`) //nolint:errcheck // released with the connection anyway
	}, nil
}

// openPooled opens a server database through a pool of connections.
func openPooled(dialector func(dsn string) gorm.Dialector) func(dsn string) (*gorm.DB, error) {
	return func(dsn string) (*gorm.DB, error) {
		db, err := gorm.Open(dialector(dsn), gormConfig())
		if err != nil {
			return nil, err
		}
		sqlDB, err := db.DB()
		if err != nil {
			return nil, err
		}
		sqlDB.SetMaxOpenConns(32)
		sqlDB.SetMaxIdleConns(16)
		sqlDB.SetConnMaxLifetime(time.Hour)
		return db, nil
	}
}
