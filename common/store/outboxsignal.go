package store

import "gorm.io/gorm"

// The publisher (master/publisher.go) numbers outbox rows. Polling the
// outbox every few milliseconds while nothing happens cost most of an idle
// standalone's CPU, so a write that appends events signals this process's
// publisher, which then polls at once and otherwise backs off. The signal
// is sent inside the appending transaction: on SQLite the publisher's read
// waits for the one writing connection, so it runs after the commit; on
// MySQL a read that comes too early finds nothing and the next poll, a
// short interval later, finds the rows. Writes of other processes (a
// cluster's API) are found by the polls alone.

const outboxSignalName = "beluga:outbox-signal"

// outboxSignal is a gorm plugin only to be found from any transaction of
// the store's writer (tx.Config.Plugins).
type outboxSignal struct{ c chan struct{} }

func (*outboxSignal) Name() string              { return outboxSignalName }
func (*outboxSignal) Initialize(*gorm.DB) error { return nil }

// signalAppended tells the publisher, without blocking, that tx appended
// events.
func signalAppended(tx *gorm.DB) {
	if o, ok := tx.Config.Plugins[outboxSignalName].(*outboxSignal); ok {
		select {
		case o.c <- struct{}{}:
		default:
		}
	}
}

// EventAppended receives after this process appended events to the outbox
// (a hint: one receive may stand for many writes, or come before the
// commit).
func (s *Store) EventAppended() <-chan struct{} {
	if o, ok := s.db.Config.Plugins[outboxSignalName].(*outboxSignal); ok {
		return o.c
	}
	return nil
}
