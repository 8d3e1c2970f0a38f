package sql

import (
	dbsql "database/sql"
	"errors"
	"reflect"
	"sync"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// sqliteInterrupt returns a function that interrupts the statement running
// on conn (sqlite3_interrupt). The pure-Go driver interrupts on a cancelled
// context only while a statement is prepared, not while its rows are
// stepped, so a long SELECT would outlive its task's timeout. The driver
// keeps the handle in unexported fields (db, tls, an embedded Mutex held
// against Close, as its own interrupt does); when they are not there, as
// after a driver upgrade, the caller is told so and goes on without.
func sqliteInterrupt(conn *dbsql.Conn) (func(), error) {
	var f func()
	err := conn.Raw(func(dc any) error {
		v := reflect.ValueOf(dc)
		if v.Kind() != reflect.Pointer || v.Elem().Kind() != reflect.Struct {
			return errNoInterrupt
		}
		s := v.Elem()
		dbf, tlsf, muf := s.FieldByName("db"), s.FieldByName("tls"), s.FieldByName("Mutex")
		if !dbf.IsValid() || dbf.Kind() != reflect.Uintptr || !tlsf.IsValid() || tlsf.Type() != reflect.TypeOf((*libc.TLS)(nil)) ||
			!muf.IsValid() || muf.Type() != reflect.TypeOf(sync.Mutex{}) {
			return errNoInterrupt
		}
		db := uintptr(dbf.Uint())
		tlsPtr := (**libc.TLS)(unsafe.Pointer(tlsf.UnsafeAddr()))
		mu := (*sync.Mutex)(unsafe.Pointer(muf.UnsafeAddr()))
		f = func() {
			mu.Lock()
			defer mu.Unlock()
			if tls := *tlsPtr; tls != nil {
				sqlite3.Xsqlite3_interrupt(tls, db)
			}
		}
		return nil
	})
	return f, err
}

var errNoInterrupt = errors.New("this sqlite driver offers no way to interrupt a statement")
