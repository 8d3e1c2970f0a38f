package master

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/failpoint"
	"github.com/beluga-scheduler/beluga/common/logging"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/schedule"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/internal/startstop"
)

// cronReload is how often the scheduler rereads the schedules when nothing
// woke it, for schedules written by an api process that could not nudge.
const cronReload = 10 * time.Second

// scheduler is the cron scheduler of a term: it writes the runs nobody asks
// for one by one. It fires each due schedule by writing its runs and moving
// its next fire time in one fenced transaction (store.FireSchedule), and
// keeps each running backfill's runs submitted up to its parallelism
// (store.SubmitBackfill); then it wakes the command consumer, which starts
// the runs like any other. Its state is only its copy of the armed
// schedules and running backfills, reread after every pass, when woken (a
// schedule or backfill was written, a backfill run ended) and every
// cronReload; the cursors live in the DB, so a new leader goes on where the
// old one stopped, and for schedules applies the catch-up policy to what was
// missed in between.
type scheduler struct {
	t     *term
	log   *zap.Logger
	clock Clock
	wake  chan struct{}
	life  startstop.Base

	crons   map[string]*schedule.Cron // parsed expressions by cron and zone
	broken  map[int64]int64           // schedule id -> revision whose cron did not parse (logged once)
	failing map[string]bool           // schedules and backfills whose last write failed (logged once per streak)
}

func newScheduler(t *term, clock Clock) *scheduler {
	if clock == nil {
		clock = realClock{}
	}
	s := &scheduler{t: t, log: t.log.Named("cron"), clock: clock, wake: make(chan struct{}, 1),
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
			s.t.checkFenced(err)
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

// schedules fires every due schedule once. The schedules due in this pass
// are written together (fireBatch at a time, one transaction each): fires
// due at the same second land within milliseconds of it, not one commit
// after another.
func (s *scheduler) schedules(ctx context.Context) (time.Duration, error) {
	scheds, err := s.t.store.ArmedSchedules(ctx)
	if err != nil {
		return 0, err
	}
	now := s.clock.Now().UTC()
	if at, ok := soonest(scheds, now); ok && at.Sub(now) <= fireLead {
		// Read ahead of the fire time: the burst's write starts at its
		// second, not a read of every schedule after it. A schedule edited
		// meanwhile is caught by its revision (ErrScheduleMoved, reread).
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-s.wake:
			return 0, nil // reread now
		case <-s.clock.After(at.Sub(now)):
		}
		now = s.clock.Now().UTC()
	}
	wait := cronReload
	var due []store.ScheduleFire
	var plans []schedule.Plan
	for _, sc := range scheds {
		next := *sc.NextFireTime
		if next.After(now) {
			wait = min(wait, max(next.Sub(now)-fireLead, 0))
			continue
		}
		f, plan, ok := s.plan(sc, now)
		if ok {
			due, plans = append(due, store.ScheduleFire{Schedule: sc, Firing: f}), append(plans, plan)
		}
	}
	for len(due) > 0 {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		n := min(len(due), fireBatch)
		w, err := s.fireAll(ctx, due[:n], plans[:n], now)
		if err != nil {
			return 0, err
		}
		wait = min(wait, w)
		due, plans = due[n:], plans[n:]
	}
	return wait, nil
}

// fireBatch bounds the schedules written in one transaction.
const fireBatch = 1000

// fireLead is how long before a fire time the scheduler reads the
// schedules, to write at the time itself.
const fireLead = 100 * time.Millisecond

// soonest is the earliest next fire time of scheds after now.
func soonest(scheds []model.Schedule, now time.Time) (time.Time, bool) {
	var at time.Time
	for _, sc := range scheds {
		if n := *sc.NextFireTime; n.After(now) && (at.IsZero() || n.Before(at)) {
			at = n
		}
	}
	return at, !at.IsZero()
}

// fireAll writes the firings of due schedules in one transaction and
// returns how long to wait for the next pass; when the batch fails (other
// than fenced) each schedule is fired on its own, so one that cannot be
// written does not hold the others back.
func (s *scheduler) fireAll(ctx context.Context, due []store.ScheduleFire, plans []schedule.Plan, now time.Time) (time.Duration, error) {
	failpoint.Hit(failpoint.BeforeFireSchedule)
	res, err := s.t.store.FireSchedules(ctx, due)
	wait := cronReload
	if err != nil {
		if errors.Is(err, store.ErrFenced) || ctx.Err() != nil {
			return 0, err
		}
		s.log.Debug("schedule batch failed; firing one by one", zap.Int("schedules", len(due)), zap.Error(err))
		for i, d := range due {
			runs, err := s.t.store.FireSchedule(ctx, d.Schedule, d.Firing)
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
		s.t.cons.Notify()
	}
	if plan.Next.IsZero() {
		return cronReload
	}
	return max(plan.Next.Sub(now), 0)
}

// plan is one pass over a due schedule: the times to fire (never one
// fired already) and its next fire time; !ok when its cron cannot parse.
func (s *scheduler) plan(sc model.Schedule, now time.Time) (store.Firing, schedule.Plan, bool) {
	c, err := s.cron(sc)
	if err != nil {
		if s.broken[sc.ID] != sc.Revision {
			s.broken[sc.ID] = sc.Revision
			s.log.Error("schedule cannot fire: bad cron; fix it over the API", zap.Int64("schedule_id", sc.ID),
				zap.String(logging.FieldProject, sc.Project), zap.String(logging.FieldWorkflow, sc.Workflow), zap.Error(err))
		}
		return store.Firing{}, schedule.Plan{}, false
	}
	plan := c.Due(*sc.NextFireTime, now, schedule.Window{Start: sc.StartTime, End: sc.EndTime}, sc.Catchup)
	f := store.Firing{}
	for _, t := range plan.Fire {
		if sc.LastFireTime == nil || t.After(*sc.LastFireTime) { // a time is never asked for twice
			f.Times = append(f.Times, t)
		}
	}
	if !plan.Next.IsZero() {
		f.Next = &plan.Next
	}
	if plan.Skipped > 0 {
		f.Note = fmt.Sprintf("%s: skipped %d missed fire time(s) from %s (catchup %s)",
			now.Format(time.RFC3339), plan.Skipped, sc.NextFireTime.Format(time.RFC3339), catchupName(sc.Catchup))
	}
	return f, plan, true
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
	bfs, err := s.t.store.ListBackfills(ctx, store.BackfillFilter{State: model.BackfillRunning, Limit: 10000})
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
		if err := s.t.store.EndBackfill(ctx, b, model.BackfillFailed, reason); err != nil {
			return err
		}
		log.Warn("backfill failed", zap.String("reason", reason))
		return nil
	case b.Submitted == len(b.Times) && b.Unfinished == 0:
		reason := fmt.Sprintf("%d succeeded, %d failed", b.Succeeded, b.Failed)
		if err := s.t.store.EndBackfill(ctx, b, model.BackfillDone, reason); err != nil {
			return err
		}
		log.Info("backfill done", zap.Int("succeeded", b.Succeeded), zap.Int("failed", b.Failed))
		return nil
	}
	n := min(b.Parallelism-b.Unfinished, len(b.Times)-b.Submitted)
	if n <= 0 {
		return nil
	}
	insts, err := s.t.store.SubmitBackfill(ctx, b, n)
	if err != nil {
		return err
	}
	for _, inst := range insts {
		log.Info("backfill run submitted", zap.Time("schedule_time", *inst.ScheduleTime), zap.Int64(logging.FieldInstance, inst.ID))
	}
	s.t.cons.Notify()
	return nil
}
