package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"gorm.io/gorm"
	"gorm.io/gorm/clause"

	"github.com/beluga-scheduler/beluga/common/model"
)

// Retention (docs/architecture.md, "Retention"): a plan lists the runs of a
// project its policy lets go, with what goes with them; a purge deletes the
// same in bounded transactions. A run goes with its whole sub_workflow tree
// (its children are never purged on their own), and only when every run of
// the tree is succeeded, failed or stopped, none has a command waiting, and
// every event of the tree has been delivered to the webhooks and the alert
// planner.

// projectRetentionRow is a project's own policy (0041).
type projectRetentionRow struct {
	ProjectID int64 `gorm:"primaryKey;autoIncrement:false"`
	KeepDays  *int
	KeepRuns  *int
	UpdatedBy string
	UpdatedAt time.Time
}

func (projectRetentionRow) TableName() string { return "project_retention" }

// RetentionGet returns project's own policy (both fields nil when it has
// none: the global default applies).
func (s *Store) RetentionGet(ctx context.Context, project string) (model.ProjectRetention, error) {
	p, err := getProject(s.db.WithContext(ctx), project)
	if err != nil {
		return model.ProjectRetention{}, err
	}
	var rows []projectRetentionRow
	if err := s.read(ctx).Where("project_id = ?", p.ID).Find(&rows).Error; err != nil {
		return model.ProjectRetention{}, fmt.Errorf("read retention of project %q: %w", project, err)
	}
	if len(rows) == 0 {
		return model.ProjectRetention{}, nil
	}
	r := rows[0]
	return model.ProjectRetention{KeepDays: r.KeepDays, KeepRuns: r.KeepRuns, UpdatedBy: r.UpdatedBy, UpdatedAt: r.UpdatedAt}, nil
}

// RetentionPut stores project's own policy (a nil field: the default).
func (s *Store) RetentionPut(ctx context.Context, project string, pr model.ProjectRetention, by string) (model.ProjectRetention, error) {
	if err := pr.Check(); err != nil {
		return model.ProjectRetention{}, fmt.Errorf("retention of project %q: %w", project, err)
	}
	p, err := getProject(s.db.WithContext(ctx), project)
	if err != nil {
		return model.ProjectRetention{}, err
	}
	r := projectRetentionRow{ProjectID: p.ID, KeepDays: pr.KeepDays, KeepRuns: pr.KeepRuns, UpdatedBy: by, UpdatedAt: now6()}
	err = s.db.WithContext(ctx).Clauses(clause.OnConflict{Columns: []clause.Column{{Name: "project_id"}},
		DoUpdates: clause.AssignmentColumns([]string{"keep_days", "keep_runs", "updated_by", "updated_at"})}).Create(&r).Error
	if err != nil {
		return model.ProjectRetention{}, fmt.Errorf("store retention of project %q: %w", project, err)
	}
	return model.ProjectRetention{KeepDays: r.KeepDays, KeepRuns: r.KeepRuns, UpdatedBy: r.UpdatedBy, UpdatedAt: r.UpdatedAt}, nil
}

// RetentionPlan is what a purge of one project deletes (or deleted).
type RetentionPlan struct {
	Project string
	Policy  model.RetentionPolicy
	At      time.Time // the "now" the policy was read at
	// Roots are the root runs that go, ascending; Instances are those and
	// their sub_workflow children, ascending.
	Roots     []int64
	Instances []int64
	// Kept counts the root runs kept by reason (model.Keep*, and the
	// store's KeptBy* reasons).
	Kept        map[string]int
	TaskRows    int64
	HistoryRows int64
	EventRows   int64
	CommandRows int64
	// LedgerRows counts the runs' rows in the ledgers of schedule fires,
	// trigger deliveries and dataset fires.
	LedgerRows int64
	// DatasetEventRows counts the produced dataset partitions older than
	// keep_days that no decision needs any more (datasetEventsToPurge).
	DatasetEventRows int64
	// LogFiles counts the task rows with a log file on a worker.
	LogFiles int64
	// Bytes estimates the database bytes freed: the stored text of the
	// rows plus a fixed size a row.
	Bytes int64
	// Skipped lists roots a purge left because their tree changed after
	// the plan (a rerun began, a command came).
	Skipped []int64
	// Unfinished are runs an interrupted purge deleted the instance rows
	// of and not yet the rest (retention_pending): this purge finishes
	// them, and the row counts above include their rows.
	Unfinished []int64

	projectID   int64
	firesBefore time.Time // runless fire rows due before it go (zero: none)
	dsEvents    []int64   // the dataset events that go, ascending
}

// Reasons a run is kept that the store finds (beside model.Keep*).
const (
	KeptByChild    = "a sub_workflow run below it is not finished"
	KeptByCommand  = "a command (an operator action) waits for it"
	KeptByEvents   = "its events are not yet delivered to every webhook and the alert planner"
	KeptByPin      = "pinned"
	retentionChunk = 500 // ids in one IN list of a plan's reads
	purgeBatch     = 200 // rows a purge transaction deletes by default
)

// Estimated fixed bytes of a row (ids, states, times, indexes), beside its
// variable text, for RetentionPlan.Bytes.
const (
	instanceRowBytes = 300
	taskRowBytes     = 200
	historyRowBytes  = 150
	eventRowBytes    = 160
	commandRowBytes  = 80
	ledgerRowBytes   = 100
	dsEventRowBytes  = 200
	auditRowBytes    = 120
)

// retentionPinned is the hook of pinned plans: the runs of ids that an
// impact plan not yet applied nor expired holds (plans.go), kept whatever
// the policy says, so the apply finds what the plan saw.
func retentionPinned(db *gorm.DB, ids []int64) (map[int64]bool, error) {
	return planPinned(db, ids, time.Now().UTC())
}

type retentionInst struct {
	ID               int64
	WorkflowName     string
	State            string
	EndTime          *time.Time
	CreatedAt        time.Time
	ParentInstanceID *int64
}

// RetentionPlan lists what policy p lets go in project at now, deleting
// nothing.
func (s *Store) RetentionPlan(ctx context.Context, project string, p model.RetentionPolicy, now time.Time) (RetentionPlan, error) {
	plan, _, err := s.retentionPlan(ctx, s.read(ctx), project, p, now)
	return plan, err
}

// retentionPlan is RetentionPlan read through db, with the instances of
// each root's tree (root first).
func (s *Store) retentionPlan(ctx context.Context, db *gorm.DB, project string, p model.RetentionPolicy,
	now time.Time) (plan RetentionPlan, trees map[int64][]int64, err error) {
	plan = RetentionPlan{Project: project, Policy: p, At: now, Roots: []int64{}, Instances: []int64{}, Kept: map[string]int{}}
	trees = map[int64][]int64{}
	if err := p.Check(); err != nil {
		return plan, nil, err
	}
	proj, err := getProject(s.db.WithContext(ctx), project)
	if err != nil {
		return plan, nil, err
	}
	plan.projectID = proj.ID
	var roots []retentionInst
	if err := db.Table("workflow_instance").Select("id, workflow_name, state, end_time, created_at").
		Where("project_id = ? AND parent_instance_id IS NULL", proj.ID).
		Order("workflow_name, id DESC").Scan(&roots).Error; err != nil {
		return plan, nil, fmt.Errorf("read runs of project %q: %w", project, err)
	}
	var cands []int64
	rank, prev := 0, ""
	for _, r := range roots {
		if r.WorkflowName != prev {
			rank, prev = 0, r.WorkflowName
		}
		rank++
		end := r.CreatedAt
		if r.EndTime != nil {
			end = *r.EndTime
		}
		if keep, why := model.RetentionKeeps(p, model.RetentionRun{State: model.WorkflowState(r.State), Rank: rank, End: end}, now); keep {
			plan.Kept[why]++
			continue
		}
		cands = append(cands, r.ID)
	}
	slices.Sort(cands)
	cursor, err := eventCursor(db)
	if err != nil {
		return plan, nil, err
	}
	for c := range slices.Chunk(cands, retentionChunk) {
		ts, err := retentionTrees(db, c, s.seqCol(), cursor)
		if err != nil {
			return plan, nil, err
		}
		for _, root := range c {
			t := ts[root]
			if t.kept != "" {
				plan.Kept[t.kept]++
				continue
			}
			plan.Roots = append(plan.Roots, root)
			plan.Instances = append(plan.Instances, t.ids...)
			trees[root] = t.ids
		}
	}
	slices.Sort(plan.Instances)
	if plan.Unfinished, err = retentionPending(db, proj.ID); err != nil {
		return plan, nil, err
	}
	if err := retentionCount(db, &plan); err != nil {
		return plan, nil, err
	}
	if p.KeepDays > 0 {
		// The ledger's rows that made no run (missed, skipped, refused)
		// go by age alone.
		plan.firesBefore = now.AddDate(0, 0, -p.KeepDays).UTC()
		var n int64
		if err := runlessFires(db, proj.ID, plan.firesBefore).Count(&n).Error; err != nil {
			return plan, nil, fmt.Errorf("count old fires without a run: %w", err)
		}
		plan.LedgerRows += n
		plan.Bytes += n * ledgerRowBytes
		if plan.dsEvents, err = datasetEventsToPurge(db, proj.ID, plan.firesBefore); err != nil {
			return plan, nil, err
		}
		plan.DatasetEventRows = int64(len(plan.dsEvents))
		plan.Bytes += plan.DatasetEventRows * dsEventRowBytes
	}
	return plan, trees, nil
}

// runlessFires selects the fire-ledger rows of project's schedules that
// made no run and were due before before.
func runlessFires(db *gorm.DB, projectID int64, before time.Time) *gorm.DB {
	return db.Table("schedule_fire").Where("workflow_instance_id IS NULL AND due_time < ? AND schedule_id IN (?)",
		before, db.Session(&gorm.Session{NewDB: true}).Table("schedule").Select("id").Where("project_id = ?", projectID))
}

// retentionPending lists the runs of project whose instance rows a purge
// deleted and whose other rows it has not (ascending).
func retentionPending(db *gorm.DB, projectID int64) ([]int64, error) {
	ids := []int64{}
	if err := db.Table("retention_pending").Where("project_id = ?", projectID).Order("instance_id").
		Pluck("instance_id", &ids).Error; err != nil {
		return nil, fmt.Errorf("read runs an earlier purge left unfinished: %w", err)
	}
	return ids, nil
}

// eventCursor is the last event seq every reader that must not miss one
// has passed: the alert planner's and every webhook subscription's.
func eventCursor(db *gorm.DB) (int64, error) {
	var alert []int64
	if err := db.Raw(`SELECT seq FROM alert_cursor WHERE id = 1`).Scan(&alert).Error; err != nil {
		return 0, fmt.Errorf("read the alert cursor: %w", err)
	}
	cur := int64(0)
	if len(alert) > 0 {
		cur = alert[0]
	}
	var subs []int64
	if err := db.Raw(`SELECT cursor_seq FROM subscription ORDER BY cursor_seq LIMIT 1`).Scan(&subs).Error; err != nil {
		return 0, fmt.Errorf("read the webhook cursors: %w", err)
	}
	if len(subs) > 0 {
		cur = min(cur, subs[0])
	}
	return cur, nil
}

type retentionTree struct {
	ids  []int64 // root first
	kept string  // why the tree stays; "" when it may go
}

// retentionTrees walks the sub_workflow trees of roots and says which must
// stay. seqCol is the event's public seq column (id on SQLite).
func retentionTrees(db *gorm.DB, roots []int64, seqCol string, cursor int64) (map[int64]*retentionTree, error) {
	out := map[int64]*retentionTree{}
	rootOf := map[int64]int64{}
	for _, r := range roots {
		out[r] = &retentionTree{ids: []int64{r}}
		rootOf[r] = r
	}
	level := roots
	for len(level) > 0 {
		var kids []retentionInst
		for c := range slices.Chunk(level, retentionChunk) {
			var part []retentionInst
			if err := db.Table("workflow_instance").Select("id, state, parent_instance_id").
				Where("parent_instance_id IN ?", c).Scan(&part).Error; err != nil {
				return nil, fmt.Errorf("read sub_workflow runs: %w", err)
			}
			kids = append(kids, part...)
		}
		level = nil
		for _, k := range kids {
			root := rootOf[*k.ParentInstanceID]
			rootOf[k.ID] = root
			t := out[root]
			t.ids = append(t.ids, k.ID)
			if !model.RetentionPurgeable(model.WorkflowState(k.State)) && t.kept == "" {
				t.kept = KeptByChild
			}
			level = append(level, k.ID)
		}
	}
	all := make([]int64, 0, len(rootOf))
	for id := range rootOf {
		all = append(all, id)
	}
	slices.Sort(all)
	mark := func(ids []int64, why string) {
		for _, id := range ids {
			if t := out[rootOf[id]]; t.kept == "" {
				t.kept = why
			}
		}
	}
	for c := range slices.Chunk(all, retentionChunk) {
		var cmd []int64
		if err := db.Table("command").Distinct("workflow_instance_id").Where("workflow_instance_id IN ?", c).
			Pluck("workflow_instance_id", &cmd).Error; err != nil {
			return nil, fmt.Errorf("read waiting commands: %w", err)
		}
		mark(cmd, KeptByCommand)
		var ev []int64
		if err := db.Table("event").Distinct("instance_id").Where("instance_id IN ? AND ("+seqCol+" IS NULL OR "+seqCol+" > ?)", c, cursor).
			Pluck("instance_id", &ev).Error; err != nil {
			return nil, fmt.Errorf("read undelivered events: %w", err)
		}
		mark(ev, KeptByEvents)
		pins, err := retentionPinned(db, c)
		if err != nil {
			return nil, fmt.Errorf("read pins: %w", err)
		}
		for id := range pins {
			mark([]int64{id}, KeptByPin)
		}
	}
	return out, nil
}

// retentionCount fills plan's row counts and bytes from its instances.
func retentionCount(db *gorm.DB, plan *RetentionPlan) error {
	type agg struct{ N, Bytes, Logs int64 }
	for c := range slices.Chunk(slices.Concat(plan.Instances, plan.Unfinished), retentionChunk) {
		var a agg
		if err := db.Raw(`SELECT COUNT(*) AS n, COALESCE(SUM(COALESCE(LENGTH(params_json), 0) + COALESCE(LENGTH(start_nodes), 0) + LENGTH(reason)), 0) AS bytes
			FROM workflow_instance WHERE id IN ?`, c).Scan(&a).Error; err != nil {
			return fmt.Errorf("size runs: %w", err)
		}
		plan.Bytes += a.Bytes + a.N*instanceRowBytes
		a = agg{}
		if err := db.Raw(`SELECT COUNT(*) AS n, COALESCE(SUM(COALESCE(LENGTH(params_json), 0) + COALESCE(LENGTH(outputs_json), 0) +
			LENGTH(message) + LENGTH(log_path) + LENGTH(wait_reason)), 0) AS bytes,
			COALESCE(SUM(CASE WHEN log_path <> '' THEN 1 ELSE 0 END), 0) AS logs
			FROM task_instance WHERE workflow_instance_id IN ?`, c).Scan(&a).Error; err != nil {
			return fmt.Errorf("size task rows: %w", err)
		}
		plan.TaskRows += a.N
		plan.LogFiles += a.Logs
		plan.Bytes += a.Bytes + a.N*taskRowBytes
		a = agg{}
		if err := db.Raw(`SELECT COUNT(*) AS n FROM instance_history WHERE workflow_instance_id IN ?`, c).Scan(&a).Error; err != nil {
			return fmt.Errorf("size history: %w", err)
		}
		plan.HistoryRows += a.N
		plan.Bytes += a.N * historyRowBytes
		a = agg{}
		if err := db.Raw(`SELECT COUNT(*) AS n, COALESCE(SUM(COALESCE(LENGTH(detail_json), 0)), 0) AS bytes
			FROM event WHERE instance_id IN ?`, c).Scan(&a).Error; err != nil {
			return fmt.Errorf("size events: %w", err)
		}
		plan.EventRows += a.N
		plan.Bytes += a.Bytes + a.N*eventRowBytes
		a = agg{}
		if err := db.Raw(`SELECT COUNT(*) AS n FROM command WHERE workflow_instance_id IN ?`, c).Scan(&a).Error; err != nil {
			return fmt.Errorf("size commands: %w", err)
		}
		plan.CommandRows += a.N
		plan.Bytes += a.N * commandRowBytes
		for _, q := range []string{`SELECT COUNT(*) AS n FROM schedule_fire WHERE workflow_instance_id IN ?`,
			`SELECT COUNT(*) AS n FROM trigger_delivery WHERE run_id IN ?`, `SELECT COUNT(*) AS n FROM dataset_fire f WHERE f.run_id IN ? AND ` + supersededFire} {
			a = agg{}
			if err := db.Raw(q, c).Scan(&a).Error; err != nil {
				return fmt.Errorf("size ledger rows: %w", err)
			}
			plan.LedgerRows += a.N
			plan.Bytes += a.N * ledgerRowBytes
		}
	}
	return nil
}

// PurgeOptions bound a purge's transactions: Batch rows each (200 when 0:
// 500 doubled a chain run's latency during a purge of 1,000,000 task rows
// on SQLite, 200 left it as without; docs/performance.md),
// and after each a pause of Pause (10ms when 0) or Yield times what the
// batch took (3 when 0), whichever is longer, so the scheduler's writes
// interleave and a purge holds the writer at most about 1/(Yield+1) of the
// time, however loaded the machine is.
type PurgeOptions struct {
	Batch int
	Pause time.Duration
	Yield float64

	haltAfterRuns bool // tests: stop as a restart would, after the instance rows
}

// errPurgeHalted is what a purge with haltAfterRuns returns.
var errPurgeHalted = errors.New("purge halted after the instance rows")

func (o PurgeOptions) norm() PurgeOptions {
	if o.Batch <= 0 {
		o.Batch = purgeBatch
	}
	if o.Pause <= 0 {
		o.Pause = 10 * time.Millisecond
	}
	if o.Yield <= 0 {
		o.Yield = 3
	}
	return o
}

// pacer spaces a purge's batches by its PurgeOptions.
type pacer struct {
	ctx   context.Context
	opt   PurgeOptions
	start time.Time
}

func (p *pacer) begin() { p.start = time.Now() }

// wait pauses after a batch begun at begin.
func (p *pacer) wait() error {
	d := max(p.opt.Pause, time.Duration(float64(time.Since(p.start))*p.opt.Yield))
	select {
	case <-p.ctx.Done():
		return p.ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// RetentionPurge deletes what RetentionPlan lists for the same arguments:
// it plans, then deletes each group of root runs' instance rows in one
// transaction that checks again that they are still purgeable (a tree that
// changed since is skipped, and its rows stay), then their task, history,
// event and command rows, opt.Batch rows a transaction, paced (see
// PurgeOptions). The instance rows go first so no action can reach a run whose
// rows are half gone; retention_pending records them in the same
// transaction until the rest is gone, so a purge that stops halfway is
// finished by the project's next. The returned plan counts what was deleted.
func (s *Store) RetentionPurge(ctx context.Context, project string, p model.RetentionPolicy, now time.Time, opt PurgeOptions) (RetentionPlan, error) {
	opt = opt.norm()
	plan, trees, err := s.retentionPlan(ctx, s.read(ctx), project, p, now)
	if err != nil {
		return plan, err
	}
	out := plan
	out.Roots, out.Instances, out.Skipped = []int64{}, []int64{}, []int64{}
	out.TaskRows, out.HistoryRows, out.EventRows, out.CommandRows, out.LedgerRows, out.DatasetEventRows = 0, 0, 0, 0, 0, 0
	pace := &pacer{ctx: ctx, opt: opt}
	var group, groupRoots []int64
	flush := func() error {
		if len(group) == 0 {
			return nil
		}
		pace.begin()
		gone, err := s.purgeInstances(ctx, plan.projectID, group, groupRoots, trees)
		if err != nil {
			return err
		}
		for _, root := range groupRoots {
			if gone[root] {
				out.Roots = append(out.Roots, root)
				out.Instances = append(out.Instances, trees[root]...)
			} else {
				out.Skipped = append(out.Skipped, root)
			}
		}
		group, groupRoots = group[:0], groupRoots[:0]
		return pace.wait()
	}
	for _, root := range plan.Roots {
		if len(group)+len(trees[root]) > opt.Batch && len(group) > 0 {
			if err := flush(); err != nil {
				return out, err
			}
		}
		group = append(group, trees[root]...)
		groupRoots = append(groupRoots, root)
	}
	if err := flush(); err != nil {
		return out, err
	}
	if opt.haltAfterRuns {
		return out, errPurgeHalted
	}
	slices.Sort(out.Instances)
	// What this purge deleted the instance rows of, and what an earlier
	// one left unfinished: both are in retention_pending now.
	pending, err := retentionPending(s.read(ctx), plan.projectID)
	if err != nil {
		return out, err
	}
	out.Unfinished = slices.DeleteFunc(slices.Clone(pending), func(id int64) bool {
		_, mine := slices.BinarySearch(out.Instances, id)
		return mine
	})
	for _, t := range []struct {
		table, col string
		n          *int64
	}{
		{"task_instance", "workflow_instance_id", &out.TaskRows},
		{"instance_history", "workflow_instance_id", &out.HistoryRows},
		{"event", "instance_id", &out.EventRows},
		{"command", "workflow_instance_id", &out.CommandRows},
		{"schedule_fire", "workflow_instance_id", &out.LedgerRows},
		{"trigger_delivery", "run_id", &out.LedgerRows},
	} {
		n, err := s.purgeRows(ctx, t.table, t.col, pending, opt, pace)
		*t.n += n
		if err != nil {
			return out, err
		}
	}
	n, err := s.purgeDatasetFires(ctx, pending, opt, pace)
	out.LedgerRows += n
	if err != nil {
		return out, err
	}
	for c := range slices.Chunk(pending, opt.Batch) {
		if err := s.tx(ctx, func(tx *gorm.DB) error {
			return tx.Exec(`DELETE FROM retention_pending WHERE instance_id IN ?`, c).Error
		}); err != nil {
			return out, fmt.Errorf("clear finished purge records: %w", err)
		}
	}
	if !plan.firesBefore.IsZero() {
		for {
			pace.begin()
			var ids []int64
			if err := runlessFires(s.read(ctx), plan.projectID, plan.firesBefore).Limit(opt.Batch).Pluck("id", &ids).Error; err != nil {
				return out, fmt.Errorf("read old fires without a run: %w", err)
			}
			if len(ids) == 0 {
				break
			}
			var n int64
			if err := s.tx(ctx, func(tx *gorm.DB) error {
				res := tx.Exec(`DELETE FROM schedule_fire WHERE id IN ?`, ids)
				n = res.RowsAffected
				return res.Error
			}); err != nil {
				return out, fmt.Errorf("delete old fires without a run: %w", err)
			}
			out.LedgerRows += n
			if err := pace.wait(); err != nil {
				return out, err
			}
			if len(ids) < opt.Batch {
				break
			}
		}
	}
	for c := range slices.Chunk(plan.dsEvents, opt.Batch) {
		pace.begin()
		var n int64
		if err := s.tx(ctx, func(tx *gorm.DB) error {
			res := tx.Exec(`DELETE FROM dataset_event WHERE id IN ?`, c)
			n = res.RowsAffected
			return res.Error
		}); err != nil {
			return out, fmt.Errorf("delete old dataset events: %w", err)
		}
		out.DatasetEventRows += n
		if err := pace.wait(); err != nil {
			return out, err
		}
	}
	return out, nil
}

// purgeInstances deletes the instance rows of the trees of roots (ids: all
// their instances) in one transaction, each tree only when every run of it
// is still purgeable and has no command waiting; it returns the roots
// whose trees went.
func (s *Store) purgeInstances(ctx context.Context, projectID int64, ids, roots []int64, trees map[int64][]int64) (map[int64]bool, error) {
	gone := map[int64]bool{}
	err := s.tx(ctx, func(tx *gorm.DB) error {
		var now []retentionInst
		if err := tx.Table("workflow_instance").Select("id, state").Where("id IN ?", ids).
			Clauses(clause.Locking{Strength: "UPDATE"}).Scan(&now).Error; err != nil {
			return fmt.Errorf("read runs to purge: %w", err)
		}
		ok := map[int64]bool{}
		for _, r := range now {
			ok[r.ID] = model.RetentionPurgeable(model.WorkflowState(r.State))
		}
		var cmd []int64
		if err := tx.Table("command").Distinct("workflow_instance_id").Where("workflow_instance_id IN ?", ids).
			Pluck("workflow_instance_id", &cmd).Error; err != nil {
			return fmt.Errorf("read waiting commands: %w", err)
		}
		for _, id := range cmd {
			ok[id] = false
		}
		var del []int64
		for _, root := range roots {
			all := true
			for _, id := range trees[root] {
				all = all && ok[id]
			}
			if all {
				gone[root] = true
				del = append(del, trees[root]...)
			}
		}
		if len(del) == 0 {
			return nil
		}
		if err := tx.Exec(`DELETE FROM workflow_instance WHERE id IN ?`, del).Error; err != nil {
			return fmt.Errorf("delete runs: %w", err)
		}
		// Their other rows go in later transactions: recorded here, so a
		// purge interrupted before then is finished by the next.
		at := time.Now().UTC()
		rows := make([]map[string]any, 0, len(del))
		for _, id := range del {
			rows = append(rows, map[string]any{"instance_id": id, "project_id": projectID, "created_at": at})
		}
		if err := tx.Table("retention_pending").Create(rows).Error; err != nil {
			return fmt.Errorf("record runs being purged: %w", err)
		}
		return nil
	})
	return gone, err
}

// purgeRows deletes the rows of table whose col is one of ids, batch rows
// a transaction, and returns how many went.
func (s *Store) purgeRows(ctx context.Context, table, col string, ids []int64, opt PurgeOptions, pace *pacer) (int64, error) {
	var total int64
	for c := range slices.Chunk(ids, opt.Batch) {
		for {
			pace.begin()
			var rows []int64
			// No ORDER BY: ordering by id would read the table by its
			// primary key instead of the index on col.
			if err := s.read(ctx).Table(table).Where(col+" IN ?", c).Limit(opt.Batch).
				Pluck("id", &rows).Error; err != nil {
				return total, fmt.Errorf("read %s rows to purge: %w", table, err)
			}
			if len(rows) == 0 {
				break
			}
			var n int64
			err := s.tx(ctx, func(tx *gorm.DB) error {
				res := tx.Exec(`DELETE FROM `+table+` WHERE id IN ?`, rows)
				n = res.RowsAffected
				return res.Error
			})
			if err != nil {
				return total, fmt.Errorf("delete %s rows: %w", table, err)
			}
			total += n
			if err := pace.wait(); err != nil {
				return total, err
			}
			if len(rows) < opt.Batch {
				break
			}
		}
	}
	return total, nil
}

// AuditRetention is what an audit purge deletes (or deleted): the audit
// rows older than Before.
type AuditRetention struct {
	Days   int
	Before time.Time
	Rows   int64
	Bytes  int64
}

// AuditRetentionPlan counts the audit rows older than days before now
// (days 0: none).
func (s *Store) AuditRetentionPlan(ctx context.Context, days int, now time.Time) (AuditRetention, error) {
	out := AuditRetention{Days: days}
	if err := model.CheckRetentionValue("audit_days", days, model.MaxRetentionDays); err != nil {
		return out, err
	}
	if days == 0 {
		return out, nil
	}
	out.Before = now.AddDate(0, 0, -days).UTC()
	var a struct{ N, Bytes int64 }
	if err := s.read(ctx).Raw(`SELECT COUNT(*) AS n, COALESCE(SUM(LENGTH(username) + LENGTH(action) + LENGTH(resource) +
		LENGTH(address) + LENGTH(outcome)), 0) AS bytes FROM audit_log WHERE at < ?`, out.Before).Scan(&a).Error; err != nil {
		return out, fmt.Errorf("size audit rows: %w", err)
	}
	out.Rows, out.Bytes = a.N, a.Bytes+a.N*auditRowBytes
	return out, nil
}

// AuditRetentionPurge deletes what AuditRetentionPlan counts, opt.Batch
// rows a transaction, paced as a run purge is; Rows is what went.
func (s *Store) AuditRetentionPurge(ctx context.Context, days int, now time.Time, opt PurgeOptions) (AuditRetention, error) {
	opt = opt.norm()
	out, err := s.AuditRetentionPlan(ctx, days, now)
	if err != nil || days == 0 {
		return out, err
	}
	out.Rows = 0
	pace := &pacer{ctx: ctx, opt: opt}
	for {
		pace.begin()
		var ids []int64
		if err := s.read(ctx).Table("audit_log").Where("at < ?", out.Before).Limit(opt.Batch).
			Pluck("id", &ids).Error; err != nil {
			return out, fmt.Errorf("read audit rows to purge: %w", err)
		}
		if len(ids) == 0 {
			return out, nil
		}
		var n int64
		if err := s.tx(ctx, func(tx *gorm.DB) error {
			res := tx.Exec(`DELETE FROM audit_log WHERE id IN ?`, ids)
			n = res.RowsAffected
			return res.Error
		}); err != nil {
			return out, fmt.Errorf("delete audit rows: %w", err)
		}
		out.Rows += n
		if len(ids) < opt.Batch {
			return out, nil
		}
		if err := pace.wait(); err != nil {
			return out, err
		}
	}
}

// InstancesMissing returns the ids among ids (ascending) that have no
// workflow_instance row: runs a retention purge deleted, whose task log
// directories a worker may then delete (worker/logsweep.go). Ids are never
// reused (AUTOINCREMENT, sequences), so a missing id stays missing.
func (s *Store) InstancesMissing(ctx context.Context, ids []int64) ([]int64, error) {
	want := slices.Clone(ids)
	slices.Sort(want)
	want = slices.Compact(want)
	found := map[int64]bool{}
	for c := range slices.Chunk(want, retentionChunk) {
		var have []int64
		if err := s.read(ctx).Table("workflow_instance").Where("id IN ?", c).Pluck("id", &have).Error; err != nil {
			return nil, fmt.Errorf("read which runs exist: %w", err)
		}
		for _, id := range have {
			found[id] = true
		}
	}
	gone := []int64{}
	for _, id := range want {
		if !found[id] {
			gone = append(gone, id)
		}
	}
	return gone, nil
}
