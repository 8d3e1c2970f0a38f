package master

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/calendar"
	"github.com/beluga-scheduler/beluga/common/failpoint"
	"github.com/beluga-scheduler/beluga/common/logging"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/schedule"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/internal/startstop"
)

// cronReload is how often the scheduler looks for due schedules when
// nothing woke it, for schedules written by an api process that could not
// nudge.
const cronReload = 10 * time.Second

// scheduler is the cron scheduler of a term: it writes the runs nobody asks
// for one by one. It fires each due schedule by writing its runs and moving
// its next fire time in one fenced transaction (store.ScheduleFireOne), and
// keeps each running backfill's runs submitted up to its parallelism
// (store.BackfillSubmit); then it wakes the command consumer, which starts
// the runs like any other. It holds no copy of the schedules: each pass
// reads the due ones and the next fire time from the DB's index, when
// woken (a schedule or backfill was written, a backfill run ended), at
// the next fire time and every cronReload; the cursors live in the DB, so
// a new leader goes on where the old one stopped, and for schedules
// applies the catch-up policy to what was missed in between.
type scheduler struct {
	env   schedulerEnv
	store scheduleStore
	log   *zap.Logger
	clock Clock
	wake  chan struct{}
	life  startstop.Base

	crons   map[string]*schedule.Cron // parsed expressions by cron and zone
	broken  map[int64]int64           // schedule id -> revision whose cron did not parse (logged once)
	failing map[string]bool           // schedules and backfills whose last write failed (logged once per streak)

	// bursting is set while a pass writes more than burstMin fires: the
	// consumer then claims only the runs a person asked for, so the
	// burst's runs starting do not queue the rest of its write behind
	// their own writes (SQLite has one writer).
	bursting atomic.Bool

	// startAt is the earliest second of runs written ahead of it whose
	// start the consumer has not been woken for (zero: none).
	startAt time.Time
}

// schedulerEnv is what the cron scheduler asks of its term: to wake the
// command consumer once runs are written, so they start now rather than
// at its next poll.
type schedulerEnv interface {
	runsWritten()
}

// burstMin is the fires of one pass from which it holds back the
// consumer's claims of other than manual runs while it writes (a smaller
// pass is one short transaction).
const burstMin = 200

// Bursting says a fire burst is being written (see bursting).
func (s *scheduler) Bursting() bool { return s.bursting.Load() }

func newScheduler(env schedulerEnv, st scheduleStore, log *zap.Logger, clock Clock) *scheduler {
	if clock == nil {
		clock = realClock{}
	}
	s := &scheduler{env: env, store: st, log: log.Named("cron"), clock: clock, wake: make(chan struct{}, 1),
		crons: map[string]*schedule.Cron{}, broken: map[int64]int64{}, failing: map[string]bool{}}
	s.life.Name, s.life.Log = "cron", s.log
	return s
}

// Notify makes the scheduler reread the schedules now.
func (s *scheduler) Notify() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

func (s *scheduler) Start(ctx context.Context) error {
	if _, err := s.life.Begin(ctx); err != nil {
		return err
	}
	s.life.Go(s.run)
	return nil
}

func (s *scheduler) Stop() { _ = s.life.Stop(nil) }

func (s *scheduler) run(ctx context.Context) {
	failing := false
	for {
		wait, err := s.pass(ctx)
		if err != nil {
			if !failing && ctx.Err() == nil {
				s.log.Error("cron pass failed; will retry", zap.Error(err))
			}
			failing, wait = true, time.Second
		} else {
			failing = false
		}
		if wait <= 0 {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-s.clock.After(wait):
		}
	}
}

// pass fires every due schedule once, tops up every running backfill, and
// returns how long to wait before the next pass (0: go again now).
func (s *scheduler) pass(ctx context.Context) (time.Duration, error) {
	wait, err := s.schedules(ctx)
	if err != nil {
		return 0, err
	}
	bw, err := s.backfills(ctx)
	return min(wait, bw), err
}

// schedules fires every due schedule once. It reads only what is due
// (and the one next fire time after it) from the index on next fire
// time, never the whole set: a schedule written, paused or deleted costs
// the next pass one indexed read, however many schedules exist, and a
// new leader has nothing to load. The schedules due in this pass are
// written together (fireBatch at a time, one transaction each): fires due
// at the same second land within milliseconds of it, not one commit after
// another.
func (s *scheduler) schedules(ctx context.Context) (time.Duration, error) {
	s.startDue()
	now := s.clock.Now().UTC()
	upTo := now
	at, ok, err := s.store.ScheduleNextFire(ctx, now)
	if err != nil {
		return 0, err
	}
	ahead := ok && at.Sub(now) <= fireLead
	if ahead {
		upTo = at
	}
	scheds, err := s.due(ctx, upTo)
	if err != nil {
		return 0, err
	}
	// A burst (more than burstMin schedules due at once) is written ahead
	// of its second; a smaller pass waits for the second and writes then,
	// one short transaction, its runs never visible before their time.
	early := ahead && len(scheds) > burstMin
	if ahead && !early {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-s.wake:
			return 0, nil // reread now
		case <-s.clock.After(at.Sub(s.clock.Now())): // from now: the read took time
		}
		now = s.clock.Now().UTC()
	}
	if early {
		// Plan as at the fire time itself: what a pass at that second
		// would fire.
		now = at
	}
	wait := cronReload
	var due []store.ScheduleFire
	var plans []schedule.Plan
	cals := map[string]calendarRead{} // read once a pass, whatever the schedules on them
	for _, sc := range scheds {
		if sc.NextFireTime.After(now) { // the clock woke early: next pass
			wait = 0
			continue
		}
		cal, err := s.calendar(ctx, sc, cals)
		if err != nil {
			wait = min(wait, time.Second) // fire it once the calendar reads, never without it
			continue
		}
		f, plan, ok := s.plan(sc, now, cal)
		if ok {
			due, plans = append(due, store.ScheduleFire{Schedule: sc, Firing: f}), append(plans, plan)
		}
	}
	if len(due) > burstMin {
		s.bursting.Store(true)
		defer func() {
			s.bursting.Store(false)
			s.env.runsWritten() // the burst's runs may start now
		}()
	}
	if early {
		// Write ahead of the fire time what can be: the burst's write is
		// done before its second, and its runs are claimable at it
		// (NotBefore, on this process's clock; the fake clock of a test is
		// mapped onto it). A pause, edit or delete before the second takes
		// the fire back in its own transaction (store.cancelAhead).
		set, rest, restPlans := splitAhead(due, plans)
		// The claim compares with this process's clock; the scheduler's
		// may be offset (a test's, the soak's step). Rounded, so that the
		// real clock maps each time onto itself, not a few µs early.
		offset := time.Since(s.clock.Now()).Round(time.Millisecond)
		for i, f := range set.fires {
			// Its latest time: one overdue already (a schedule written
			// just now) is claimable at once.
			set.fires[i].NotBefore = f.Firing.Times[len(f.Firing.Times)-1].Add(offset)
		}
		w, err := s.fireBatches(ctx, set.fires, set.plans, now, at)
		if err != nil {
			return 0, err
		}
		wait = min(wait, w)
		if len(set.fires) > 0 && (s.startAt.IsZero() || at.Before(s.startAt)) {
			s.startAt = at // wake the consumer then (run)
		}
		if len(rest) == 0 {
			// Nothing left for the second: the next pass is then at the
			// latest, and backfills are not held up meanwhile.
			wait = min(wait, max(at.Sub(s.clock.Now()), 0))
			return s.nextWait(ctx, wait)
		}
		// Wait for the second to write the others (overlap policies that
		// look at the runs unfinished at it). A wake meanwhile stays
		// pending for the next pass.
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-s.clock.After(at.Sub(s.clock.Now())): // from now: the write took time
		}
		s.startDue()
		due, plans = rest, restPlans
		now = s.clock.Now().UTC()
	}
	w, err := s.fireBatches(ctx, due, plans, now, time.Time{})
	if err != nil {
		return 0, err
	}
	wait = min(wait, w)
	return s.nextWait(ctx, wait)
}

// nextWait is how long to wait for the next pass: at most wait, and due
// fireLead before the next fire time, which the fires just written may
// have moved.
func (s *scheduler) nextWait(ctx context.Context, wait time.Duration) (time.Duration, error) {
	now := s.clock.Now().UTC()
	at, ok, err := s.store.ScheduleNextFire(ctx, now)
	if err != nil {
		return 0, err
	}
	if ok {
		wait = min(wait, max(at.Sub(now)-fireLead, 0))
	}
	if !s.startAt.IsZero() {
		wait = min(wait, max(s.startAt.Sub(now), 0))
	}
	return wait, nil
}

// startDue wakes the command consumer once the second of runs written
// ahead of it has come: they are claimable now, and it would otherwise
// find them at its next poll.
func (s *scheduler) startDue() {
	if !s.startAt.IsZero() && !s.clock.Now().Before(s.startAt) {
		s.startAt = time.Time{}
		s.env.runsWritten()
	}
}

// fireBatches writes due fireBatch at a time (see fireAll); at, when set,
// is the fire time they are written ahead of.
func (s *scheduler) fireBatches(ctx context.Context, due []store.ScheduleFire, plans []schedule.Plan, now, at time.Time) (time.Duration, error) {
	wait := cronReload
	for len(due) > 0 {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		n := min(len(due), fireBatch)
		w, err := s.fireAll(ctx, due[:n], plans[:n], now, at)
		if err != nil {
			return 0, err
		}
		wait = min(wait, w)
		due, plans = due[n:], plans[n:]
	}
	return wait, nil
}

// aheadSet is the fires of a pass written ahead of their time, and their
// plans.
type aheadSet struct {
	fires []store.ScheduleFire
	plans []schedule.Plan
}

// splitAhead parts a pass's fires into those that can be written ahead of
// their time (overlap allow: every run starts whatever runs before it)
// and the rest, which are written at the second, their overlap policy
// reading the runs unfinished then.
func splitAhead(due []store.ScheduleFire, plans []schedule.Plan) (early aheadSet, rest []store.ScheduleFire, restPlans []schedule.Plan) {
	for i, f := range due {
		if o := f.Schedule.Overlap; (o == "" || o == model.OverlapAllow) && len(f.Firing.Times) > 0 {
			early.fires, early.plans = append(early.fires, f), append(early.plans, plans[i])
			continue
		}
		rest, restPlans = append(rest, f), append(restPlans, plans[i])
	}
	return early, rest, restPlans
}

// due reads every enabled schedule due at or before upTo, a page of
// fireBatch at a time.
func (s *scheduler) due(ctx context.Context, upTo time.Time) ([]model.Schedule, error) {
	var out []model.Schedule
	var after store.ScheduleKey
	for {
		page, err := s.store.ScheduleDue(ctx, upTo, after, fireBatch)
		if err != nil {
			return nil, err
		}
		out = append(out, page...)
		if len(page) < fireBatch {
			return out, nil
		}
		last := page[len(page)-1]
		after = store.ScheduleKey{At: *last.NextFireTime, ID: last.ID}
	}
}

// fireBatch bounds the schedules read in one statement and written in one
// transaction.
const fireBatch = 1000

// fireLead is how long before a fire time the scheduler reads the
// schedules due at it. A burst of more than burstMin is written then,
// ahead of its second (ScheduleFire.NotBefore), so that nothing is left to
// write at the second: 10,000 fires are 0.65-1.2 s of CPU to write on
// SQLite and ~7 s of wall on a loaded MariaDB, and a lead of 1 s left half
// of a 10,000 burst committed after its second at a load of 17 on 2
// cores. Its runs are visible (submitted, not claimable) up to that much
// before their second; a pause, edit or delete meanwhile takes them back.
// A smaller pass waits for the second and writes then.
const fireLead = 5 * time.Second

// fireAll writes the firings of due schedules in one transaction and
// returns how long to wait for the next pass; when the batch fails (other
// than fenced) each schedule is fired on its own, so one that cannot be
// written does not hold the others back.
func (s *scheduler) fireAll(ctx context.Context, due []store.ScheduleFire, plans []schedule.Plan, now, at time.Time) (time.Duration, error) {
	failpoint.Hit(failpoint.BeforeFireSchedule)
	res, err := s.store.ScheduleFireBatch(ctx, due)
	wait := cronReload
	if err != nil {
		if errors.Is(err, store.ErrFenced) || ctx.Err() != nil {
			return 0, err
		}
		s.log.Debug("schedule batch failed; firing one by one", zap.Int("schedules", len(due)), zap.Error(err))
		if !at.IsZero() {
			// One by one writes runs claimable at once: not before their
			// second.
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-s.clock.After(at.Sub(s.clock.Now())):
			}
		}
		for i, d := range due {
			runs, err := s.store.ScheduleFireOne(ctx, d.Schedule, d.Firing)
			if errors.Is(err, store.ErrFenced) || ctx.Err() != nil {
				return 0, err
			}
			wait = min(wait, s.fired(d.Schedule, plans[i], len(d.Firing.Times), runs, err, now))
		}
		return wait, nil
	}
	failpoint.Hit(failpoint.AfterFireSchedule)
	for i, d := range due {
		wait = min(wait, s.fired(d.Schedule, plans[i], len(d.Firing.Times), res[i].Runs, res[i].Err, now))
	}
	return wait, nil
}

// fired logs the outcome of one schedule's write and returns how long to
// wait for its next pass.
func (s *scheduler) fired(sc model.Schedule, plan schedule.Plan, asked int, insts []model.WorkflowInstance, err error, now time.Time) time.Duration {
	switch {
	case errors.Is(err, store.ErrScheduleMoved):
		s.log.Debug("schedule changed while firing; rereading", zap.Int64("schedule_id", sc.ID))
		return 20 * time.Millisecond // soon, but never a spin
	case err != nil: // this schedule only; the others go on
		s.failed("schedule", sc.ID, sc.Project+"/"+sc.Workflow, err)
		return time.Second
	}
	delete(s.failing, "schedule"+strconv.FormatInt(sc.ID, 10))
	countFired(plan, asked, insts, s.clock.Now())
	if plan.Skipped > 0 {
		s.log.Warn("skipped missed fire times", zap.Int64("schedule_id", sc.ID), zap.String(logging.FieldProject, sc.Project), zap.String(logging.FieldWorkflow, sc.Workflow),
			zap.Int("skipped", plan.Skipped), zap.String("catchup", catchupName(sc.Catchup)))
	}
	for _, inst := range insts {
		s.log.Info("schedule fired", zap.Int64("schedule_id", sc.ID), logging.Instance(inst.ID, sc.Project, sc.Workflow),
			zap.Time("schedule_time", *inst.ScheduleTime))
	}
	if len(insts) > 0 {
		s.env.runsWritten()
	}
	if plan.Next.IsZero() {
		return cronReload
	}
	return max(plan.Next.Sub(now), 0)
}

// calendarRead is a calendar read in a pass, or why it could not be.
type calendarRead struct {
	cal *schedule.Calendar
	err error
}

// calendar is the business calendar sc fires by (nil: none). One that
// cannot be read holds the schedule back (logged once a streak): firing
// without it would fire on holidays.
func (s *scheduler) calendar(ctx context.Context, sc model.Schedule, cals map[string]calendarRead) (*schedule.Calendar, error) {
	if sc.Calendar == "" {
		return nil, nil
	}
	key := sc.Project + "/" + sc.Calendar
	cr, ok := cals[key]
	if !ok {
		c, err := s.store.CalendarFor(ctx, sc.Project, sc.Calendar)
		if err == nil {
			cr.cal = calendar.Business(c)
		} else {
			cr.err = fmt.Errorf("calendar %q: %w", sc.Calendar, err)
		}
		cals[key] = cr
	}
	if cr.err != nil {
		s.failed("schedule", sc.ID, sc.Project+"/"+sc.Workflow, cr.err)
	}
	return cr.cal, cr.err
}

// plan is one pass over a due schedule: the times to fire (never one
// fired already) and its next fire time; !ok when its cron cannot parse.
// Under a calendar the walk starts at the first adjusted time at or after
// the stored next fire time: the stored one was planned under the calendar
// as it was then, and a holiday added since moves it on. The adjusted
// times are a pure function of the cron, zone, calendar and policy, so a
// new leader plans the same ones.
func (s *scheduler) plan(sc model.Schedule, now time.Time, cal *schedule.Calendar) (store.Firing, schedule.Plan, bool) {
	c, err := s.cron(sc)
	if err != nil {
		if s.broken[sc.ID] != sc.Revision {
			s.broken[sc.ID] = sc.Revision
			s.log.Error("schedule cannot fire: bad cron; fix it over the API", zap.Int64("schedule_id", sc.ID),
				zap.String(logging.FieldProject, sc.Project), zap.String(logging.FieldWorkflow, sc.Workflow), zap.Error(err))
		}
		return store.Firing{}, schedule.Plan{}, false
	}
	from := *sc.NextFireTime
	calendared := false
	if cal != nil && c.Wall() {
		calendared, c = true, c.WithCalendar(cal, sc.OnHoliday)
		if from = c.Next(from.Add(-time.Nanosecond)); from.IsZero() {
			return store.Firing{Note: fmt.Sprintf("%s: no business day left to fire on (calendar %s)", now.Format(time.RFC3339), sc.Calendar)},
				schedule.Plan{}, true
		}
	}
	plan := c.Due(from, now, schedule.Window{Start: sc.StartTime, End: sc.EndTime}, sc.Catchup)
	f := store.Firing{}
	for _, t := range plan.Fire {
		if sc.LastFireTime == nil || t.After(*sc.LastFireTime) { // a time is never asked for twice
			f.Times = append(f.Times, t)
		}
	}
	if !plan.Next.IsZero() {
		f.Next = &plan.Next
	}
	f.Missed = plan.Missed
	if calendared {
		f.Refused = refused(c, refusedFrom(sc), now)
	}
	if plan.Skipped > 0 {
		f.Note = fmt.Sprintf("%s: skipped %d missed fire time(s) from %s (catchup %s)",
			now.Format(time.RFC3339), plan.Skipped, sc.NextFireTime.Format(time.RFC3339), catchupName(sc.Catchup))
	}
	return f, plan, true
}

// refusedFrom is where a pass's list of refused times starts: after the
// last fire; before the first, the time the schedule was written, not its
// stored next fire time, which the calendar may already have moved past a
// day off (that day's cron time is a ledger row too), and not before the
// schedule's window.
func refusedFrom(sc model.Schedule) time.Time {
	if sc.LastFireTime != nil {
		return sc.LastFireTime.Add(time.Nanosecond)
	}
	lo := *sc.NextFireTime
	if !sc.UpdatedAt.IsZero() && sc.UpdatedAt.Before(lo) {
		lo = sc.UpdatedAt
	}
	if sc.StartTime != nil && lo.Before(*sc.StartTime) {
		lo = *sc.StartTime
	}
	return lo
}

// refused lists the cron times in [from, now] that c's calendar did not
// run as themselves (a day off; under next or previous business day,
// moved or merged into another fire), at most schedule.MaxMissed, for the
// ledger of fires: decided by schedule.Cron.Dates, as a backfill of the
// schedule decides its times.
func refused(c *schedule.Cron, from, now time.Time) []time.Time {
	d := c.Dates(from, now, schedule.MaxMissed)
	var out []time.Time
	for _, r := range d.Refused {
		out = append(out, r.Time)
	}
	return out
}

func (s *scheduler) cron(sc model.Schedule) (*schedule.Cron, error) {
	key := sc.Cron + "\x00" + sc.Timezone
	if c, ok := s.crons[key]; ok {
		return c, nil
	}
	c, err := schedule.Parse(sc.Cron, sc.Timezone)
	if err != nil {
		return nil, err
	}
	if len(s.crons) >= 4096 { // bound the cache; parsing again is cheap
		clear(s.crons)
	}
	s.crons[key] = c
	return c, nil
}

func catchupName(p string) string {
	if p == "" {
		return schedule.CatchupLatest
	}
	return p
}

// failed logs the first failure of a streak of one schedule or backfill.
func (s *scheduler) failed(kind string, id int64, workflow string, err error) {
	key := kind + strconv.FormatInt(id, 10)
	if !s.failing[key] {
		s.failing[key] = true
		s.log.Error(kind+" write failed; will retry", zap.Int64(kind+"_id", id), zap.String("workflow", workflow), zap.Error(err))
	}
}

// backfills submits the next times of each running backfill while it has
// fewer than its parallelism unfinished runs, and ends the backfills that
// are through (done) or hit a failure under on_failure stop (failed).
func (s *scheduler) backfills(ctx context.Context) (time.Duration, error) {
	bfs, err := s.store.BackfillList(ctx, store.BackfillFilter{State: model.BackfillRunning, Limit: 10000})
	if err != nil {
		return 0, err
	}
	wait := cronReload
	for _, b := range bfs {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		err := s.backfill(ctx, b)
		switch {
		case errors.Is(err, store.ErrBackfillMoved):
			wait = min(wait, 20*time.Millisecond)
		case errors.Is(err, store.ErrFenced) || ctx.Err() != nil:
			return 0, err
		case err != nil:
			s.failed("backfill", b.ID, b.Project+"/"+b.Workflow, err)
			wait = min(wait, time.Second)
		default:
			delete(s.failing, "backfill"+strconv.FormatInt(b.ID, 10))
		}
	}
	return wait, nil
}

func (s *scheduler) backfill(ctx context.Context, b model.Backfill) error {
	log := s.log.With(zap.Int64("backfill_id", b.ID), zap.String(logging.FieldProject, b.Project), zap.String(logging.FieldWorkflow, b.Workflow))
	switch {
	case b.Failed > 0 && b.OnFailure == model.BackfillStop:
		reason := fmt.Sprintf("%d run(s) failed; %d of %d times were not submitted (on_failure stop)", b.Failed, len(b.Times)-b.Submitted, len(b.Times))
		if err := s.store.BackfillEnd(ctx, b, model.BackfillFailed, reason); err != nil {
			return err
		}
		log.Warn("backfill failed", zap.String("reason", reason))
		return nil
	case b.Submitted == len(b.Times) && b.Unfinished == 0:
		reason := fmt.Sprintf("%d succeeded, %d failed", b.Succeeded, b.Failed)
		if err := s.store.BackfillEnd(ctx, b, model.BackfillDone, reason); err != nil {
			return err
		}
		log.Info("backfill done", zap.Int("succeeded", b.Succeeded), zap.Int("failed", b.Failed))
		return nil
	}
	n := min(b.Parallelism-b.Unfinished, len(b.Times)-b.Submitted)
	if n <= 0 {
		return nil
	}
	insts, err := s.store.BackfillSubmit(ctx, b, n)
	if err != nil {
		return err
	}
	for _, inst := range insts {
		log.Info("backfill run submitted", zap.Time("schedule_time", *inst.ScheduleTime), zap.Int64(logging.FieldInstance, inst.ID))
	}
	s.env.runsWritten()
	return nil
}

func (t *term) runsWritten() { t.cons.Notify() }
