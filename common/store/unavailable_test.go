package store_test

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/beluga-scheduler/beluga/common/store"
)

type sqlState string

func (s sqlState) Error() string    { return "pg: " + string(s) }
func (s sqlState) SQLState() string { return string(s) }

func TestUnavailable(t *testing.T) {
	dial := &net.OpError{Op: "dial", Net: "tcp", Err: fmt.Errorf("connect: %w", syscall.ECONNREFUSED)}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"dial refused, wrapped", fmt.Errorf("authenticate: %w", dial), true},
		{"bad conn", driver.ErrBadConn, true},
		{"mysql invalid connection", fmt.Errorf("q: %w", gomysql.ErrInvalidConn), true},
		{"mysql too many connections", &gomysql.MySQLError{Number: 1040, Message: "Too many connections"}, true},
		{"mysql duplicate key", &gomysql.MySQLError{Number: 1062, Message: "Duplicate entry"}, false},
		{"postgres admin shutdown", sqlState("57P01"), true},
		{"postgres connection failure", sqlState("08006"), true},
		{"postgres unique violation", sqlState("23505"), false},
		{"not found", store.ErrNotFound, false},
		{"plain", errors.New("boom"), false},
	} {
		if got := store.Unavailable(tc.err); got != tc.want {
			t.Errorf("%s: Unavailable(%v) = %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
