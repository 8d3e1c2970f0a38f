package dependent

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/tasktype"
	"github.com/beluga-scheduler/beluga/testkit/hosttest"
	"github.com/beluga-scheduler/beluga/testkit/leakcheck"
)

func TestMain(m *testing.M) { os.Exit(leakcheck.Run(m)) }

func TestWindow(t *testing.T) {
	// Wednesday 2026-12-02 14:30 in Shanghai (06:30 UTC).
	sh, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		t.Fatal(err)
	}
	base := time.Date(2026, 12, 2, 6, 30, 0, 0, time.UTC)
	at := func(s string) time.Time {
		v, err := time.ParseInLocation("2006-01-02 15:04", s, sh)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, c := range []struct{ date, from, to string }{
		{"today", "2026-12-02 00:00", "2026-12-03 00:00"},
		{"yesterday", "2026-12-01 00:00", "2026-12-02 00:00"},
		{"current_hour", "2026-12-02 14:00", "2026-12-02 15:00"},
		{"last_hour", "2026-12-02 13:00", "2026-12-02 14:00"},
		{"this_week", "2026-11-30 00:00", "2026-12-07 00:00"},
		{"last_week", "2026-11-23 00:00", "2026-11-30 00:00"},
		{"this_month", "2026-12-01 00:00", "2027-01-01 00:00"},
		{"last_month", "2026-11-01 00:00", "2026-12-01 00:00"},
		{"last_7_days", "2026-11-25 00:00", "2026-12-02 00:00"},
	} {
		from, to, err := Window(c.date, base, sh)
		if err != nil || !from.Equal(at(c.from)) || !to.Equal(at(c.to)) {
			t.Errorf("%s: got [%v, %v) %v, want [%s, %s)", c.date, from, to, err, c.from, c.to)
		}
	}
	// Sunday belongs to the week that began on Monday; January's last month is December.
	sun := time.Date(2026, 1, 4, 23, 0, 0, 0, time.UTC)
	if from, _, _ := Window("this_week", sun, time.UTC); !from.Equal(time.Date(2025, 12, 29, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("this_week of a Sunday: %v", from)
	}
	if from, to, _ := Window("last_month", sun, time.UTC); !from.Equal(time.Date(2025, 12, 1, 0, 0, 0, 0, time.UTC)) || !to.Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("last_month in January: %v %v", from, to)
	}
	// The zone decides the day: 23:30 UTC is already tomorrow in Shanghai.
	late := time.Date(2026, 12, 2, 23, 30, 0, 0, time.UTC)
	if from, _, _ := Window("today", late, sh); !from.Equal(at("2026-12-03 00:00")) {
		t.Errorf("today in the schedule's zone: %v", from)
	}
	if _, _, err := Window("tomorrow", base, sh); err == nil {
		t.Error("an unknown date gave no error")
	}
}

func TestVerdict(t *testing.T) {
	for _, c := range []struct {
		name     string
		seen     []Seen
		onFailed string
		relation string
		want     Status
	}{
		{"nothing seen", []Seen{{}}, "fail", "all", Waiting},
		{"one succeeded", []Seen{{Succeeded: 1}}, "fail", "all", Succeeded},
		{"a failure with a later success", []Seen{{Succeeded: 1, Failed: 2}}, "fail", "all", Succeeded},
		{"failed, fail", []Seen{{Failed: 1}}, "fail", "all", Failed},
		{"failed, another still running", []Seen{{Failed: 1, Other: 1}}, "fail", "all", Waiting},
		{"failed, wait", []Seen{{Failed: 1}}, "wait", "all", Waiting},
		{"all: one of two", []Seen{{Succeeded: 1}, {}}, "fail", "all", Waiting},
		{"all: both", []Seen{{Succeeded: 1}, {Succeeded: 3}}, "fail", "all", Succeeded},
		{"all: one failed", []Seen{{Succeeded: 1}, {Failed: 1}}, "fail", "all", Failed},
		{"any: one of two", []Seen{{Succeeded: 1}, {}}, "fail", "any", Succeeded},
		{"any: one failed, one waits", []Seen{{Failed: 1}, {}}, "fail", "any", Waiting},
		{"any: both failed", []Seen{{Failed: 1}, {Failed: 1}}, "fail", "any", Failed},
	} {
		st := make([]Status, len(c.seen))
		for i, s := range c.seen {
			st[i] = Of(s, c.onFailed)
		}
		if got := Verdict(c.relation, st); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}

func TestCheck(t *testing.T) {
	bad := &Spec{WaitFor: []Dep{{Date: "someday"}}, Relation: "most", OnFailed: "cry", CheckInterval: "soon"}
	if p := check(bad); len(p) != 5 {
		t.Errorf("problems: %q", p)
	}
	if p := check(&Spec{WaitFor: []Dep{{Workflow: "ingest", Date: "today"}}, CheckInterval: "1m"}); len(p) != 0 {
		t.Errorf("a good spec: %q", p)
	}
}

// The type's master face hands its attempts to the leader's Wait service.
func TestMasterFaceWait(t *testing.T) {
	var h hosttest.Host
	Type.Start(context.Background(), &h, hosttest.Attempt(7))
	Type.Cancel(context.Background(), &h, hosttest.Attempt(7), tasktype.CancelPause)
	if want := []string{"StartWait(7)", "CancelWait(7, pause)"}; !slices.Equal(h.Calls, want) {
		t.Fatalf("calls %q, want %q", h.Calls, want)
	}
}

func TestBase(t *testing.T) {
	sched, start := time.Date(2026, 12, 1, 2, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 3, 0, 0, 0, time.UTC)
	created := time.Date(2026, 12, 1, 1, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		sched, start *time.Time
		zone         string
		want         time.Time
		loc          string
	}{
		{&sched, &start, "Asia/Shanghai", sched, "Asia/Shanghai"},
		{nil, &start, "", start, "UTC"},
		{nil, nil, "Nowhere/Else", created, "UTC"},
	} {
		got, loc := Base(tc.sched, tc.start, created, tc.zone)
		if !got.Equal(tc.want) || loc.String() != tc.loc {
			t.Fatalf("Base(%v, %v, %q) = %v %v, want %v %v", tc.sched, tc.start, tc.zone, got, loc, tc.want, tc.loc)
		}
	}
}
