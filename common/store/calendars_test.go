package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/store"
)

// TestCalendarLifecycle: shared and project calendars are put, read,
// listed and deleted by name; a project's own comes first for its
// schedules; a schedule naming no calendar that exists is refused; a
// calendar in use is not deleted, and the refusal names the schedules.
func TestCalendarLifecycle(t *testing.T) {
	each(t, func(t *testing.T, s *store.Store) {
		ctx := context.Background()
		s.ProjectCreate(ctx, "demo", "")
		s.ProjectCreate(ctx, "other", "")
		s.WorkflowPut(ctx, "demo", mustSpec(t, diamond))

		cn := model.Calendar{Name: "cn", Weekend: []time.Weekday{time.Saturday, time.Sunday},
			Holidays:  []model.CalendarDay{{Date: "2026-10-01", Name: "National Day"}, {Date: "2026-10-02"}},
			Workdays:  []model.CalendarDay{{Date: "2026-10-10", Name: "make-up"}},
			UpdatedBy: "admin"}
		got, created, err := s.CalendarPut(ctx, cn, nil)
		if err != nil || !created || got.ID == 0 || got.Version != 1 || got.Project != "" || len(got.Holidays) != 2 || got.Workdays[0].Name != "make-up" {
			t.Fatalf("create shared: %+v %v %v", got, created, err)
		}
		stale := int64(0)
		if _, _, err := s.CalendarPut(ctx, cn, &stale); !errors.Is(err, store.ErrConflict) {
			t.Fatalf("put over an edit made since the read: %v", err)
		}
		cn.Holidays, cn.Weekend = cn.Holidays[:1], []time.Weekday{}
		one := int64(1)
		got2, created, err := s.CalendarPut(ctx, cn, &one)
		if err != nil || created || got2.ID != got.ID || got2.Version != 2 || len(got2.Holidays) != 1 || len(got2.Weekend) != 0 || !got2.CreatedAt.Equal(got.CreatedAt) {
			t.Fatalf("replace: %+v %v %v", got2, created, err)
		}
		read, err := s.CalendarGet(ctx, "", "cn")
		if err != nil || read.Version != 2 || len(read.Weekend) != 0 || read.Holidays[0] != (model.CalendarDay{Date: "2026-10-01", Name: "National Day"}) {
			t.Fatalf("get: %+v %v", read, err)
		}
		if _, err := s.CalendarGet(ctx, "demo", "cn"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a shared calendar is not the project's: %v", err)
		}
		if _, _, err := s.CalendarPut(ctx, model.Calendar{Project: "nope", Name: "x"}, nil); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("calendar of a missing project: %v", err)
		}
		// The shared one is what a schedule of any project finds, until
		// the project has its own of that name.
		if c, err := s.CalendarFor(ctx, "demo", "cn"); err != nil || c.ID != got.ID || c.Project != "" {
			t.Fatalf("for demo, shared: %+v %v", c, err)
		}
		own, _, err := s.CalendarPut(ctx, model.Calendar{Project: "demo", Name: "cn", Weekend: []time.Weekday{time.Friday}}, nil)
		if err != nil || own.Project != "demo" {
			t.Fatalf("project's own: %+v %v", own, err)
		}
		if c, err := s.CalendarFor(ctx, "demo", "cn"); err != nil || c.ID != own.ID || c.Project != "demo" || c.Weekend[0] != time.Friday {
			t.Fatalf("for demo, own: %+v %v", c, err)
		}
		if c, err := s.CalendarFor(ctx, "other", "cn"); err != nil || c.ID != got.ID {
			t.Fatalf("for other, shared: %+v %v", c, err)
		}
		if l, err := s.CalendarList(ctx, ""); err != nil || len(l) != 1 || l[0].Name != "cn" {
			t.Fatalf("list shared: %+v %v", l, err)
		}
		if l, err := s.CalendarList(ctx, "demo"); err != nil || len(l) != 1 || l[0].ID != own.ID {
			t.Fatalf("list demo: %+v %v", l, err)
		}

		// Schedules: an unknown calendar is refused and nothing is written.
		if _, _, err := s.SchedulePut(ctx, model.Schedule{Project: "demo", Workflow: "diamond", Cron: "0 2 * * *", Calendar: "nope"}, nil); !errors.Is(err, store.ErrUnknownCalendar) {
			t.Fatalf("unknown calendar: %v", err)
		}
		if _, err := s.ScheduleGet(ctx, "demo", "diamond"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("a refused schedule was written: %v", err)
		}
		sc, _, err := s.SchedulePut(ctx, model.Schedule{Project: "demo", Workflow: "diamond", Cron: "0 2 * * *", Calendar: "cn", OnHoliday: "next_business_day"}, nil)
		if err != nil || sc.Calendar != "cn" || sc.OnHoliday != "next_business_day" {
			t.Fatalf("schedule on cn: %+v %v", sc, err)
		}
		if r, _ := s.ScheduleGet(ctx, "demo", "diamond"); r.Calendar != "cn" || r.OnHoliday != "next_business_day" {
			t.Fatalf("read back: %+v", r)
		}
		if c, ok, err := s.ScheduleCalendar(ctx, sc.ID); err != nil || !ok || c.ID != own.ID {
			t.Fatalf("the schedule's calendar: %+v %v %v", c, ok, err)
		}
		if _, ok, err := s.ScheduleCalendar(ctx, sc.ID+1000); err != nil || ok {
			t.Fatalf("a missing schedule's calendar: %v %v", ok, err)
		}
		// A calendar edit moves the next fire time, only from the revision read.
		sc.Enabled = true
		t0 := time.Date(2030, 10, 8, 2, 0, 0, 0, time.UTC)
		sc.NextFireTime = &t0
		if sc, _, err = s.SchedulePut(ctx, sc, nil); err != nil {
			t.Fatal(err)
		}
		t1 := t0.Add(-24 * time.Hour)
		if err := s.ScheduleSetNext(ctx, sc, &t1); err != nil {
			t.Fatal(err)
		}
		if err := s.ScheduleSetNext(ctx, sc, &t0); !errors.Is(err, store.ErrScheduleMoved) {
			t.Fatalf("set next from a stale read: %v", err)
		}
		if r, _ := s.ScheduleGet(ctx, "demo", "diamond"); !r.NextFireTime.Equal(t1) || r.Revision != sc.Revision+1 {
			t.Fatalf("after set next: %+v", r)
		}
		sc, _ = s.ScheduleGet(ctx, "demo", "diamond")
		// The schedule uses demo's own cn: that one is not deleted, the
		// shared one is (no schedule resolves to it).
		if err := s.CalendarDelete(ctx, "demo", "cn"); !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "demo/diamond") {
			t.Fatalf("delete in use: %v", err)
		}
		if u, err := s.CalendarUsers(ctx, "", "cn"); err != nil || len(u) != 0 {
			t.Fatalf("users of the shadowed shared calendar: %v %v", u, err)
		}
		if err := s.CalendarDelete(ctx, "", "cn"); err != nil {
			t.Fatalf("delete the shadowed shared one: %v", err)
		}
		// Move the schedule to a new shared calendar: that one is now in use.
		if _, _, err := s.CalendarPut(ctx, model.Calendar{Name: "us"}, nil); err != nil {
			t.Fatal(err)
		}
		sc.Calendar = "us"
		if _, _, err := s.SchedulePut(ctx, sc, nil); err != nil {
			t.Fatal(err)
		}
		if err := s.CalendarDelete(ctx, "", "us"); !errors.Is(err, store.ErrConflict) || !strings.Contains(err.Error(), "demo/diamond") {
			t.Fatalf("delete shared in use: %v", err)
		}
		if err := s.CalendarDelete(ctx, "demo", "cn"); err != nil {
			t.Fatalf("delete unused: %v", err)
		}
		if err := s.CalendarDelete(ctx, "demo", "cn"); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("delete twice: %v", err)
		}
		if err := s.ScheduleDelete(ctx, "demo", "diamond"); err != nil {
			t.Fatal(err)
		}
		if err := s.CalendarDelete(ctx, "", "us"); err != nil {
			t.Fatalf("delete once unused: %v", err)
		}
	})
}
