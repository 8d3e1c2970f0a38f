package store

import (
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	gomysql "github.com/go-sql-driver/mysql"
)

// Unavailable reports whether err says the database cannot be reached or
// is going away (refused or broken connections, a server shutting down or
// out of connections), rather than anything about the request. Such an
// error passes when the database is back (database/sql dials again on the
// next use), so callers answer "try again later" instead of a failure.
func Unavailable(err error) bool {
	if err == nil {
		return false
	}
	var opErr *net.OpError
	var myErr *gomysql.MySQLError
	var state interface{ SQLState() string } // PostgreSQL (pgconn.PgError)
	switch {
	case errors.As(err, &opErr),
		errors.Is(err, driver.ErrBadConn),
		errors.Is(err, gomysql.ErrInvalidConn),
		errors.Is(err, syscall.ECONNREFUSED),
		errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EPIPE),
		errors.Is(err, io.ErrUnexpectedEOF):
		return true
	case errors.As(err, &myErr):
		switch myErr.Number {
		case 1040, 1053, 1077, 1152, 1158, 1159, 1160, 1161: // too many connections, shutdown, aborted or broken packets
			return true
		}
		return false
	case errors.As(err, &state):
		s := state.SQLState()
		// Class 08: connection exception; 57P01-57P03: shutdown, crash
		// recovery, cannot connect now; 53300: too many connections.
		return strings.HasPrefix(s, "08") || s == "57P01" || s == "57P02" || s == "57P03" || s == "53300"
	}
	return false
}
