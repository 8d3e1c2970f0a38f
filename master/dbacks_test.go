package master

import (
	"reflect"
	"testing"

	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/remote"
)

type namedPeer struct{ nopPeer }

func TestDBAcksOnePerTaskAndWorker(t *testing.T) {
	w1, w2 := nopPeer{}, namedPeer{}
	rep := func(p remote.Peer, id int64, k store.ReportKind) report {
		return report{peer: p, rep: store.Report{ID: id, Kind: k}}
	}
	batch := []report{
		rep(w1, 1, store.ReportRunning), // 0: answered by 2
		rep(w1, 2, store.ReportAck),     // 1
		rep(w1, 1, store.ReportResult),  // 2
		rep(w2, 1, store.ReportResult),  // 3: another worker: its own answer, a kill
		rep(w1, 3, store.ReportResult),  // 4: a re-sent result
		rep(w1, 3, store.ReportAck),     // 5: then a re-sent ack: the result's answer covers it
		rep(w1, 4, store.ReportAck),     // 6: foreign ack, applied running: a kill
		rep(w1, 4, store.ReportRunning), // 7
	}
	out := []store.ReportOutcome{store.Applied, store.Applied, store.Applied, store.Foreign,
		store.Duplicate, store.Duplicate, store.Foreign, store.Applied}
	got := dbAcks(batch, out)
	want := []dbAck{{1, false}, {2, false}, {3, true}, {4, false}, {7, true}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("dbAcks = %v, want %v", got, want)
	}
	if got := dbAcks(batch[3:4], out[3:4]); !reflect.DeepEqual(got, []dbAck{{0, true}}) {
		t.Fatalf("dbAcks of one foreign report = %v", got)
	}
}
