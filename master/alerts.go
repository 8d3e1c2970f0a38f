package master

import (
	"container/heap"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/beluga-scheduler/beluga/common/alert"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
	"github.com/beluga-scheduler/beluga/common/store"
	"github.com/beluga-scheduler/beluga/internal/startstop"
)

// alertTrigger decides which alert trigger (spec.Alert*) an event is, if
// any: a run's end (failure, success), a timeout warning, a task tried
// again (its next attempt written: submitted or delayed, attempt > 1).
func alertTrigger(e model.Event) (string, bool) {
	switch e.Kind {
	case model.EventInstance:
		switch model.WorkflowState(e.State) {
		case model.WorkflowFailed:
			return spec.AlertFailure, true
		case model.WorkflowSucceeded:
			return spec.AlertSuccess, true
		}
	case model.EventTimeout:
		return spec.AlertTimeout, true
	case model.EventTask:
		st := model.TaskState(e.State)
		if e.Attempt > 1 && (st == model.TaskDelayed || st == model.TaskSubmitted) {
			return spec.AlertRetry, true
		}
	}
	return "", false
}

// alertKey names what an alert is about, so each alerts once per channel
// however often it is planned (a new leader plans again from its cursor).
func alertKey(trigger string, e model.Event, channel string) string {
	switch trigger {
	case spec.AlertRetry:
		return fmt.Sprintf("retry:%d:%s", e.TaskInstanceID, channel)
	case spec.AlertTimeout:
		return fmt.Sprintf("timeout:%d:%d:%d:%s", e.InstanceID, e.TaskInstanceID, e.Attempt, channel)
	}
	// one per run outcome: attempt is the instance's run count
	return fmt.Sprintf("%s:%d:%d:%s", trigger, e.InstanceID, e.Attempt, channel)
}

func alertText(trigger string, e model.Event, detail string) string {
	var b strings.Builder
	switch trigger {
	case spec.AlertRetry:
		fmt.Fprintf(&b, "task %s of %s/%s run %d failed and is tried again (attempt %d)", e.TaskName, e.Project, e.Workflow, e.InstanceID, e.Attempt)
	case spec.AlertTimeout:
		fmt.Fprintf(&b, "%s/%s run %d: %s", e.Project, e.Workflow, e.InstanceID, detail)
	default:
		fmt.Fprintf(&b, "%s/%s run %d %s", e.Project, e.Workflow, e.InstanceID, e.State)
		if detail != "" {
			fmt.Fprintf(&b, ": %s", detail)
		}
	}
	return b.String()
}

// alerter is the leader's alerting: it plans alerts from the event stream
// (from its persisted cursor, so a new leader goes on where the last one
// stopped), fires deadline alerts at their deadlines from timers restored
// from the unfinished instances, and sends pending alerts with retries and
// back-off, folding a storm (more than StormLimit a minute on a channel)
// into one summary.
type alerter struct {
	store alertStore
	log   *zap.Logger
	cfg   EventsConfig
	def   func(ctx context.Context, id int64) (*definition, error)
	wake  chan struct{}         // alerts were planned: the sender looks now
	feed  *mailbox[model.Event] // batches the publisher numbered, in order
	life  startstop.Base
	send  alert.Sender
	// stormLimit alerts per stormWindow and channel at most (StormLimit a
	// minute; tests shorten it).
	stormLimit  int
	stormWindow time.Duration
	// forecastEvery is how often the runs with a deadline are projected
	// (ForecastEvery; at most forecastsPerTick a tick).
	forecastEvery time.Duration
}

func newAlerter(st alertStore, log *zap.Logger, cfg EventsConfig, def func(context.Context, int64) (*definition, error)) *alerter {
	a := &alerter{store: st, log: log.Named("alerts"), cfg: cfg, def: def, wake: make(chan struct{}, 1),
		feed: newMailbox[model.Event](), send: alert.Sender{Client: cfg.Client},
		stormLimit: StormLimit, stormWindow: time.Minute, forecastEvery: ForecastEvery}
	a.life.Name, a.life.Log = "alerter", a.log
	return a
}

func (a *alerter) Start(ctx context.Context) error {
	if _, err := a.life.Begin(ctx); err != nil {
		return err
	}
	deadlines := make(chan model.WorkflowInstance, 64)
	a.life.Go(func(ctx context.Context) { a.plan(ctx, deadlines) })
	a.life.Go(func(ctx context.Context) { a.deadlines(ctx, deadlines) })
	a.life.Go(a.sender)
	return nil
}

func (a *alerter) Stop() { _ = a.life.Stop(nil) }

// Feed hands over a batch the publisher numbered; never blocks.
func (a *alerter) Feed(evs []model.Event) { a.feed.Put(evs...) }

// Wake tells the sender alerts were planned; never blocks.
func (a *alerter) Wake() {
	select {
	case a.wake <- struct{}{}:
	default:
	}
}

// checkErr reports a failed leader write; false when the term is over.
func (a *alerter) checkErr(ctx context.Context, what string, err error) bool {
	if errors.Is(err, store.ErrFenced) {
		return false // the term heard it from its store view
	}
	if err != nil && ctx.Err() == nil {
		a.log.Warn(what, zap.Error(err))
	}
	return ctx.Err() == nil
}

// workflowAlerts is the alerts setting and deadline of an instance.
func (a *alerter) workflowAlerts(ctx context.Context, instanceID int64) (*spec.Alerts, string, model.WorkflowInstance, error) {
	inst, err := a.store.InstanceGet(ctx, instanceID)
	if err != nil {
		return nil, "", inst, err
	}
	al, dl, err := a.settings(ctx, inst)
	return al, dl, inst, err
}

// settings are inst's alerts and deadline: its schedule's where it set
// them, else its workflow version's.
func (a *alerter) settings(ctx context.Context, inst model.WorkflowInstance) (*spec.Alerts, string, error) {
	d, err := a.def(ctx, inst.DefinitionID)
	if err != nil {
		return nil, "", err
	}
	al, dl := d.wf.Alerts, d.wf.Deadline
	if inst.ScheduleID != 0 {
		sc, err := a.store.ScheduleGet(ctx, inst.Project, inst.Workflow)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, "", err
		}
		if err == nil && sc.ID == inst.ScheduleID {
			if sc.Alerts != nil {
				al = sc.Alerts
			}
			if sc.Deadline != "" {
				dl = sc.Deadline
			}
		}
	}
	return al, dl, nil
}

// cursorEvery bounds how often the planner records its place when no alert
// was planned (planning again after a failover is harmless: alerts are
// keyed by what they are about).
const cursorEvery = 5 * time.Second

// plan turns events into alerts: first those after its persisted cursor
// from the outbox (what the last term left), then the batches the
// publisher hands over (Feed), skipping what the catch-up already read.
func (a *alerter) plan(ctx context.Context, deadlines chan<- model.WorkflowInstance) {
	cursor, err := a.store.AlertCursor(ctx)
	if !a.checkErr(ctx, "read alert cursor", err) {
		return
	}
	saved, savedAt := cursor, time.Now()
	handle := func(evs []model.Event) bool {
		plan, ok := a.planBatch(ctx, evs, cursor, deadlines)
		if !ok {
			return false
		}
		if n := len(evs); n > 0 && evs[n-1].Seq > cursor {
			cursor = evs[n-1].Seq
		}
		if len(plan) == 0 && (cursor == saved || time.Since(savedAt) < cursorEvery) {
			return true
		}
		added, err := a.store.AlertAdd(ctx, plan, cursor)
		if !a.checkErr(ctx, "plan alerts", err) {
			return false
		}
		if err == nil {
			saved, savedAt = cursor, time.Now()
		}
		if len(added) > 0 {
			a.Wake()
		}
		return true
	}
	for { // catch up from the outbox
		evs, err := a.store.EventList(ctx, cursor, model.EventFilter{}, 500)
		if !a.checkErr(ctx, "read events for alerts", err) {
			return
		}
		if err != nil {
			sleep(ctx, time.Second)
			continue
		}
		if !handle(evs) {
			return
		}
		if len(evs) < 500 {
			break
		}
	}
	tick := time.NewTicker(cursorEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			if !handle(nil) { // records the cursor if it moved
				return
			}
		case <-a.feed.Ready():
			if !handle(a.feed.Drain()) {
				return
			}
		}
	}
}

// planBatch plans the alerts of the events after cursor.
func (a *alerter) planBatch(ctx context.Context, evs []model.Event, cursor int64, deadlines chan<- model.WorkflowInstance) ([]model.Alert, bool) {
	var plan []model.Alert
	for _, e := range evs {
		if e.Seq <= cursor {
			continue
		}
		if e.Kind == model.EventInstance && e.State == string(model.WorkflowSubmitted) {
			if inst, err := a.store.InstanceGet(ctx, e.InstanceID); err == nil {
				select {
				case deadlines <- inst:
				case <-ctx.Done():
					return nil, false
				}
			}
		}
		if e.Kind == model.EventGitSync {
			plan = append(plan, a.gitAlerts(ctx, e)...)
			continue
		}
		if e.Kind == model.EventPromotion {
			plan = append(plan, a.driftAlerts(ctx, e)...)
			continue
		}
		trigger, ok := alertTrigger(e)
		if !ok {
			continue
		}
		cfg, _, _, err := a.workflowAlerts(ctx, e.InstanceID)
		if err != nil {
			a.log.Warn("read an instance's alerts", zap.Int64("instance_id", e.InstanceID), zap.Error(err))
			continue
		}
		if !cfg.Wants(trigger) {
			continue
		}
		var detail struct{ Detail string }
		_ = json.Unmarshal(e.Detail, &detail)
		for _, ch := range cfg.Channels {
			plan = append(plan, model.Alert{Key: alertKey(trigger, e, ch), Channel: ch, Kind: trigger, Project: e.Project,
				Workflow: e.Workflow, InstanceID: e.InstanceID, Message: alertText(trigger, e, detail.Detail)})
		}
	}
	return plan, true
}

// gitAlerts are the alerts of a git_sync event: a refused commit, told to
// the binding's alert channels.
func (a *alerter) gitAlerts(ctx context.Context, e model.Event) []model.Alert {
	if e.State != "refused" {
		return nil
	}
	b, err := a.store.GitBindingGet(ctx, e.Project)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			a.log.Warn("read a git binding's alert channels", zap.String("project", e.Project), zap.Error(err))
		}
		return nil
	}
	var d struct{ Commit, File, Error string }
	_ = json.Unmarshal(e.Detail, &d)
	return gitRefusedAlerts(e.Project, d.Commit, d.File, d.Error, b.AlertChannels)
}

// driftAlerts are the alerts of a promotion drift event: told to the
// target project's promotion alert channels. The store appends the event
// once per drift; the key (project, workflow, first drifted version) keeps
// a replayed event from alerting twice.
func (a *alerter) driftAlerts(ctx context.Context, e model.Event) []model.Alert {
	if e.State != "drift" {
		return nil
	}
	g, err := a.store.PromotionGateGet(ctx, e.Project)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			a.log.Warn("read a promotion gate's alert channels", zap.String("project", e.Project), zap.Error(err))
		}
		return nil
	}
	var d struct {
		SinceVersion    int    `json:"since_version"`
		PromotedVersion int    `json:"promoted_version"`
		EditedBy        string `json:"edited_by"`
	}
	_ = json.Unmarshal(e.Detail, &d)
	return driftAlertsOf(e.Project, e.Workflow, d.SinceVersion, d.PromotedVersion, d.EditedBy, g.AlertChannels)
}

// AlertDrift is the kind of the alert of a gated workflow edited outside
// promotion.
const AlertDrift = "promotion_drift"

func driftAlertsOf(project, workflow string, since, promoted int, by string, channels []string) []model.Alert {
	who := by
	if who == "" {
		who = "the server"
	}
	text := fmt.Sprintf("workflow %s/%s drifted: version %d was made by %s outside promotion; its schedules still run promoted version %d",
		project, workflow, since, who, promoted)
	out := make([]model.Alert, 0, len(channels))
	for _, ch := range channels {
		sum := sha256.Sum256([]byte(project + "\x00" + workflow + "\x00" + strconv.Itoa(since) + "\x00" + ch))
		out = append(out, model.Alert{Key: "drift:" + hex.EncodeToString(sum[:16]), Channel: ch, Kind: AlertDrift,
			Project: project, Workflow: workflow, Message: text})
	}
	return out
}

// AlertGitRefused is the kind of the alert of a refused Git commit.
const AlertGitRefused = "git_refused"

// gitRefusedAlerts is one alert per channel of a refused commit, keyed by
// the commit: a commit refused again (each periodic sync reads it anew)
// alerts once. A sync that could not fetch names no commit and no file; it
// is keyed by its reason, so that a lasting outage alerts once too.
func gitRefusedAlerts(project, commit, file, reason string, channels []string) []model.Alert {
	what := commit
	if what == "" {
		what = "fetch:" + reason
	}
	text := fmt.Sprintf("git sync of project %s refused commit %s, nothing changed: %s: %s", project, commit, file, reason)
	if commit == "" && file == "" {
		text = fmt.Sprintf("git sync of project %s failed, nothing changed: %s", project, reason)
	}
	out := make([]model.Alert, 0, len(channels))
	for _, ch := range channels {
		sum := sha256.Sum256([]byte(project + "\x00" + what + "\x00" + ch))
		out = append(out, model.Alert{Key: "git:" + hex.EncodeToString(sum[:16]), Channel: ch, Kind: AlertGitRefused,
			Project: project, Message: text})
	}
	return out
}

// deadlineItem is one instance's deadline.
type deadlineItem struct {
	at       time.Time
	instance int64
}

type deadlineQueue []deadlineItem

func (q deadlineQueue) Len() int           { return len(q) }
func (q deadlineQueue) Less(i, j int) bool { return q[i].at.Before(q[j].at) }
func (q deadlineQueue) Swap(i, j int)      { q[i], q[j] = q[j], q[i] }
func (q *deadlineQueue) Push(x any)        { *q = append(*q, x.(deadlineItem)) }
func (q *deadlineQueue) Pop() any {
	old := *q
	it := old[len(old)-1]
	*q = old[:len(old)-1]
	return it
}

// deadlineOf is when inst must have succeeded by under its workflow's
// deadline setting.
func deadlineOf(setting string, inst model.WorkflowInstance) (time.Time, bool) {
	return spec.InstanceDeadline(setting, inst)
}

// deadlines owns the deadline timers: restored from the unfinished
// instances when the term begins, added for each new instance, each fired
// at its time (an alert if the run has not succeeded by then).
func (a *alerter) deadlines(ctx context.Context, add <-chan model.WorkflowInstance) {
	var q deadlineQueue
	seen := map[int64]bool{}
	// watch: the runs whose projected end is checked against their
	// deadline each forecast tick, before the miss (forecasts.go).
	watch, order, next := map[int64]*watched{}, []int64(nil), 0
	push := func(inst model.WorkflowInstance) {
		if seen[inst.ID] {
			return
		}
		_, dl, err := a.settings(ctx, inst)
		if err != nil || dl == "" {
			return
		}
		if at, ok := deadlineOf(dl, inst); ok {
			seen[inst.ID] = true
			heap.Push(&q, deadlineItem{at: at, instance: inst.ID})
			if watch[inst.ID] == nil && time.Now().Before(at) {
				watch[inst.ID] = &watched{id: inst.ID, deadline: at}
				order = append(order, inst.ID)
			}
		}
	}
	unfinished, err := a.store.InstanceUnfinished(ctx)
	if !a.checkErr(ctx, "read unfinished instances", err) {
		return
	}
	for _, inst := range unfinished {
		push(inst)
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	fc := time.NewTicker(a.forecastEvery)
	defer fc.Stop()
	for {
		if len(q) > 0 {
			timer.Reset(time.Until(q[0].at))
		} else {
			timer.Reset(time.Hour)
		}
		select {
		case <-ctx.Done():
			return
		case inst := <-add:
			push(inst)
		case <-fc.C:
			if !a.forecastTick(ctx, watch, &order, &next) {
				return
			}
		case <-timer.C:
			for len(q) > 0 && !q[0].at.After(time.Now()) {
				it := heap.Pop(&q).(deadlineItem)
				delete(seen, it.instance)
				if !a.fireDeadline(ctx, it) {
					return
				}
			}
		}
	}
}

// fireDeadline alerts the channels of an instance not succeeded at its
// deadline; false when the term is over.
func (a *alerter) fireDeadline(ctx context.Context, it deadlineItem) bool {
	cfg, _, inst, err := a.workflowAlerts(ctx, it.instance)
	if err != nil {
		return a.checkErr(ctx, "read instance at its deadline", err)
	}
	if inst.State == model.WorkflowSucceeded {
		return true
	}
	a.log.Warn("run missed its deadline", zap.Int64("instance_id", inst.ID), zap.String("workflow", inst.Workflow),
		zap.String("project", inst.Project), zap.Time("deadline", it.at), zap.String("state", string(inst.State)))
	if cfg == nil {
		return true
	}
	var plan []model.Alert
	for _, ch := range cfg.Channels {
		plan = append(plan, model.Alert{Key: fmt.Sprintf("deadline:%d:%d:%s", inst.ID, inst.RunTimes, ch), Channel: ch,
			Kind: "deadline", Project: inst.Project, Workflow: inst.Workflow, InstanceID: inst.ID,
			Message: fmt.Sprintf("%s/%s run %d is %s at its deadline %s", inst.Project, inst.Workflow, inst.ID, inst.State,
				it.at.Format(time.RFC3339))})
	}
	_, err = a.store.AlertAdd(ctx, plan, 0)
	a.Wake()
	return a.checkErr(ctx, "add deadline alerts", err)
}

// ForecastEvery is how often the leader projects the end of the running
// runs that have a deadline, to alert before a miss.
const ForecastEvery = time.Second

// StormLimit is the most alerts a channel gets a minute; beyond it they are
// folded into one summary sent when the minute is over.
const StormLimit = 10

// sender sends the due alerts, one at a time.
func (a *alerter) sender(ctx context.Context) {
	sent := map[string][]time.Time{}    // channel -> send times in the last minute
	held := map[string][]model.Alert{}  // channel -> alerts folded into its next summary
	heldSince := map[string]time.Time{} // channel -> first alert held
	idle := time.NewTimer(0)
	defer idle.Stop()
	for {
		now := time.Now()
		for ch, hs := range held {
			if now.Sub(heldSince[ch]) < a.stormWindow {
				continue
			}
			var b strings.Builder
			fmt.Fprintf(&b, "%d more alerts in a minute were held back:", len(hs))
			for _, h := range hs {
				fmt.Fprintf(&b, "\n- %s: %s", h.Kind, h.Message)
			}
			_, err := a.store.AlertAdd(ctx, []model.Alert{{Key: fmt.Sprintf("summary:%s:%d", ch, heldSince[ch].UnixNano()),
				Channel: ch, Kind: "summary", Message: b.String()}}, 0)
			if !a.checkErr(ctx, "add a summary alert", err) {
				return
			}
			delete(held, ch)
			delete(heldSince, ch)
		}
		due, err := a.store.AlertDue(ctx, now, 50)
		if !a.checkErr(ctx, "read due alerts", err) {
			return
		}
		for _, al := range due {
			win := sent[al.Channel][:0]
			for _, t := range sent[al.Channel] {
				if now.Sub(t) < a.stormWindow {
					win = append(win, t)
				}
			}
			sent[al.Channel] = win
			if len(win) >= a.stormLimit && al.Kind != "summary" && al.Kind != "test" && al.Attempts == 0 {
				if len(held[al.Channel]) == 0 {
					heldSince[al.Channel] = now
				}
				held[al.Channel] = append(held[al.Channel], al)
				if !a.checkErr(ctx, "fold an alert", a.store.AlertAttempt(ctx, al.ID, model.AlertSummarized, "", now)) {
					return
				}
				continue
			}
			err := a.deliver(ctx, al)
			state, next, msg := model.AlertSent, now, ""
			if err != nil {
				msg = err.Error()
				state, next = model.AlertPending, now.Add(backoff(a.cfg.RetryBase, a.cfg.RetryMax, al.Attempts+1))
				if al.Attempts+1 >= a.cfg.MaxAttempts {
					state = model.AlertFailed
				}
				a.log.Warn("send alert", zap.Int64("alert", al.ID), zap.String("channel", al.Channel),
					zap.Int("attempt", al.Attempts+1), zap.Error(err))
			} else {
				sent[al.Channel] = append(sent[al.Channel], time.Now())
			}
			if !a.checkErr(ctx, "record an alert", a.store.AlertAttempt(ctx, al.ID, state, msg, next)) {
				return
			}
		}
		if len(due) == 50 {
			continue
		}
		idle.Reset(a.cfg.Poll * 25) // a test alert the API wrote is seen within this (500 ms: each look is a query, and idle CPU counts)
		select {
		case <-ctx.Done():
			return
		case <-idle.C:
		case <-a.wake:
		}
	}
}

func (a *alerter) deliver(ctx context.Context, al model.Alert) error {
	ch, err := a.store.AlertChannelGet(ctx, al.Channel)
	if err != nil {
		return fmt.Errorf("channel %q: %w", al.Channel, err)
	}
	var c alert.Config
	if err := json.Unmarshal(ch.ConfigJSON, &c); err != nil {
		return fmt.Errorf("channel %q: settings: %w", al.Channel, err)
	}
	var secret string
	if ch.SecretSealed != "" {
		if a.cfg.Secrets == nil {
			return fmt.Errorf("channel %q has a secret and this master has no secret key (--secret-key-file)", al.Channel)
		}
		if secret, err = a.cfg.Secrets.OpenFor(ch.SecretSealed, alert.SealContext(al.Channel)); err != nil {
			return fmt.Errorf("channel %q: open its secret: %w", al.Channel, err)
		}
	}
	return a.send.Send(ctx, ch.Kind, c, secret, alert.Message{ID: al.ID, Kind: al.Kind, Project: al.Project,
		Workflow: al.Workflow, InstanceID: al.InstanceID, Text: al.Message, Time: al.CreatedAt})
}
