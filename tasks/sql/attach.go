package sql

import (
	dbsql "database/sql"
	"errors"

	"github.com/ncruces/go-sqlite3"
)

// sqliteNoAttach sets the engine's limit of attached databases on conn to
// 0: ATTACH (and VACUUM INTO, which attaches its copy) then fails in the
// engine, however the statement is spelled, so a task reaches no file but
// its datasource's (docs/security.md, section 4). The limit, unlike an
// authorizer, also holds for statements the engine runs on its own behalf.
func sqliteNoAttach(conn *dbsql.Conn) error {
	return conn.Raw(func(dc any) error {
		h, ok := dc.(interface{ Raw() *sqlite3.Conn })
		if !ok {
			return errNoHandle
		}
		h.Raw().Limit(sqlite3.LIMIT_ATTACHED, 0)
		if h.Raw().Limit(sqlite3.LIMIT_ATTACHED, -1) != 0 {
			return errors.New("could not set the sqlite limit of attached databases to 0")
		}
		return nil
	})
}

var errNoHandle = errors.New("this sqlite driver does not expose its connection handle")
