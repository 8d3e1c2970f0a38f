package store

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"gorm.io/gorm"

	"github.com/beluga-scheduler/beluga/common/model"
)

// The event outbox (docs/architecture.md, Events). Every write site that
// changes an instance's or a task's state calls appendEvents once, in its
// own transaction, so an event exists exactly when the change committed.
// On MySQL the rows carry no public order yet: the leader's publisher
// (PublishEventsFrom) numbers committed rows one batch at a time, so readers
// following seq never see a number below one they already read.
//
// On SQLite an event's seq is its id (seqIsID), public at commit: numbering
// rows again cost as much CPU as writing them. SQLite has one writer at a
// time across every connection and process (the read pool is query_only),
// and AUTOINCREMENT hands out an id above every id that ever committed
// inside the write lock, released only at commit: id order is commit order.
// A reader's snapshot then holds a prefix of the ids, so one that read up
// to N finds every later commit above N, and no id below N appears after
// it (a rolled-back id is never seen, its reuse commits above N). Rows the
// old publisher had not numbered get their seq, and ids are made their
// seq, by migration 0023.

type eventRow struct {
	ID             int64
	Seq            *int64
	Time           time.Time
	Kind           string
	Project        string
	Workflow       string
	InstanceID     int64
	TaskInstanceID int64
	TaskName       string
	State          string
	Attempt        int
	DetailJSON     *string `gorm:"column:detail_json"`
}

func (eventRow) TableName() string { return "event" }

func (r eventRow) model() model.Event {
	e := model.Event{Time: r.Time.UTC(), Kind: r.Kind, Project: r.Project, Workflow: r.Workflow,
		InstanceID: r.InstanceID, TaskInstanceID: r.TaskInstanceID, TaskName: r.TaskName,
		State: r.State, Attempt: r.Attempt}
	if r.Seq != nil {
		e.Seq = *r.Seq
	}
	if r.DetailJSON != nil && json.Valid([]byte(*r.DetailJSON)) {
		e.Detail = json.RawMessage(*r.DetailJSON)
	}
	return e
}

const eventCols = `id, seq, time, kind, project, workflow, instance_id, task_instance_id, task_name, state, attempt, detail_json`

// seqIsID says an event's public seq is its id: where writes are serial,
// ids commit in order (SQLite, see above).
func (s *Store) seqIsID() bool { return s.d.serialWrites }

// seqCol is the column that holds an event's public seq.
func (s *Store) seqCol() string {
	if s.seqIsID() {
		return "id"
	}
	return "seq"
}

// eventColsSeq selects eventCols with the public seq in seq's place.
func (s *Store) eventColsSeq() string {
	if s.seqIsID() {
		return `id, id, time, kind, project, workflow, instance_id, task_instance_id, task_name, state, attempt, detail_json`
	}
	return eventCols
}

// scanEvents reads the rows of q (selecting eventCols) without gorm's
// reflection, which costs the publisher more than the query.
func scanEvents(q *gorm.DB) ([]eventRow, error) {
	rs, err := q.Rows()
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []eventRow
	for rs.Next() {
		var r eventRow
		if err := rs.Scan(&r.ID, &r.Seq, &r.Time, &r.Kind, &r.Project, &r.Workflow, &r.InstanceID, &r.TaskInstanceID,
			&r.TaskName, &r.State, &r.Attempt, &r.DetailJSON); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, rs.Err()
}

// changed names the rows one write changed: tasks by task instance id,
// instances by workflow instance id.
type changed struct {
	tasks     []int64
	instances []int64
	warning   *model.HistoryEntry // a timeout warning: an event of its own kind
}

// historyChanges makes an event of a timeout warning the runner recorded;
// other history entries are not state changes.
func historyChanges(e model.HistoryEntry) changed {
	if e.Action != model.TimeoutWarning {
		return changed{}
	}
	return changed{warning: &e}
}

func taskChanges(ids ...int64) changed     { return changed{tasks: ids} }
func instanceChanges(ids ...int64) changed { return changed{instances: ids} }

// appendEvents writes one outbox row per changed row, with the state the row
// has now (in tx, so after the write), its names copied from the instance.
// One INSERT ... SELECT per kind keeps it to a statement or two however many
// rows changed.
func appendEvents(tx *gorm.DB, c changed) error {
	signalAppended(tx)
	now := time.Now().UTC()
	for ids := range slices.Chunk(uniq(c.tasks), maxInIDs) {
		err := tx.Exec(`INSERT`+orFail(tx)+` INTO event (time, kind, project, workflow, instance_id, task_instance_id, task_name, state, attempt) `+
			`SELECT ?, ?, w.project_name, w.workflow_name, t.workflow_instance_id, t.id, t.name, t.state, t.attempt `+
			`FROM task_instance t JOIN workflow_instance w ON w.id = t.workflow_instance_id WHERE t.id IN ? ORDER BY t.id`,
			now, model.EventTask, ids).Error
		if err != nil {
			return fmt.Errorf("append %d task events: %w", len(ids), err)
		}
	}
	if w := c.warning; w != nil {
		detail := jsonText(map[string]string{"detail": w.Detail}, 1)
		err := tx.Exec(`INSERT INTO event (time, kind, project, workflow, instance_id, task_instance_id, task_name, state, attempt, detail_json) `+
			`SELECT ?, ?, w.project_name, w.workflow_name, w.id, ?, COALESCE((SELECT name FROM task_instance WHERE id = ?), ''), ?, w.run_times, ? `+
			`FROM workflow_instance w WHERE w.id = ?`,
			now, model.EventTimeout, w.TaskInstanceID, w.TaskInstanceID, string(model.TimeoutWarning), detail, w.InstanceID).Error
		if err != nil {
			return fmt.Errorf("append timeout event: %w", err)
		}
	}
	for ids := range slices.Chunk(uniq(c.instances), maxInIDs) {
		err := tx.Exec(`INSERT`+orFail(tx)+` INTO event (time, kind, project, workflow, instance_id, task_instance_id, task_name, state, attempt, detail_json) `+
			`SELECT ?, ?, project_name, workflow_name, id, 0, '', state, run_times, NULL FROM workflow_instance WHERE id IN ? ORDER BY id`,
			now, model.EventInstance, ids).Error
		if err != nil {
			return fmt.Errorf("append %d instance events: %w", len(ids), err)
		}
	}
	return nil
}

// maxInIDs bounds the ids of one "IN ?" list: SQLite takes at most 32,766
// variables in a statement and MySQL 65,535 placeholders, and a
// 100,000-task instance writes more rows than either at once.
const maxInIDs = 10000

// orFail is the dialect's conflict clause of a multi-row write
// (dialect.conflictClause: SQLite's OR FAIL).
func orFail(tx *gorm.DB) string { return dialectOf(tx).conflictClause }

// uniq drops zero ids and repeats, keeping the first order.
func uniq(ids []int64) []int64 {
	if len(ids) < 2 {
		if len(ids) == 1 && ids[0] == 0 {
			return nil
		}
		return ids
	}
	seen := make(map[int64]struct{}, len(ids))
	out := ids[:0:0]
	for _, id := range ids {
		if _, ok := seen[id]; ok || id == 0 {
			continue
		}
		seen[id] = struct{}{}
		out = append(out, id)
	}
	return out
}

// EventCursor is what a publisher knows between batches, so a busy one
// spends two statements per batch: Last is the highest seq it numbered
// (-1: unknown, read from the table), Busy says its last batch found rows
// (then the idle check outside a transaction is skipped). On SQLite Last
// is the highest seq handed over, and -1 means the newest now. ID is the
// highest outbox id published (seq is id on SQLite; a batch's last id on
// MySQL and PostgreSQL): the rows above it are the backlog (EventBacklog).
type EventCursor struct {
	Last int64
	Busy bool
	ID   int64
}

// EventCursorNew is where a new term's publisher starts, taken before its
// readers start: what it then hands over (the hub, the alerter's feed)
// follows on from what they read from the table. MySQL: the publisher
// goes on from the unnumbered rows. SQLite: every committed row is
// published, so it starts after the newest now; the readers' own cursors
// cover the rows up to it.
func (s *Store) EventCursorNew(ctx context.Context) (EventCursor, error) {
	if !s.seqIsID() {
		// Published up to the row before the oldest unnumbered one.
		var id int64
		err := s.db.WithContext(ctx).Raw(`SELECT COALESCE((SELECT MIN(id) FROM event WHERE seq IS NULL) - 1, (SELECT MAX(id) FROM event), 0)`).
			Scan(&id).Error
		if err != nil {
			return EventCursor{Last: -1, ID: -1}, fmt.Errorf("read the event outbox: %w", err)
		}
		return EventCursor{Last: -1, ID: id}, nil
	}
	last, err := s.EventLastSeq(ctx)
	if err != nil {
		return EventCursor{Last: -1, ID: -1}, err
	}
	return EventCursor{Last: last, ID: last}, nil
}

// EventPublishFrom numbers up to limit committed, unnumbered outbox rows,
// in id order after the highest seq, in one fenced transaction, and
// returns them (on SQLite, where rows are public at commit, it returns the
// rows after c.Last: handOverEvents). Only the leader calls it (a stale
// term is fenced), so seqs are handed out by one writer at a time and a
// committed seq is never followed by a lower one. A batch gets seq = id + k
// with one k making its first seq follow the highest: ids' gaps kept (seqs
// increase, they need not be consecutive). The publisher keeps c between
// calls; c.Last is only trusted within one term: the fenced transaction
// proves no other publisher numbered rows since.
func (s *Store) EventPublishFrom(ctx context.Context, c *EventCursor, limit int) ([]model.Event, error) {
	if s.seqIsID() {
		return s.handOverEvents(ctx, c, limit)
	}
	if !c.Busy {
		// Idle polls stay outside a (fenced, on SQLite writing) transaction.
		var any []int64
		if err := s.db.WithContext(ctx).Model(&eventRow{}).Where("seq IS NULL").Limit(1).Pluck("id", &any).Error; err != nil {
			return nil, fmt.Errorf("publish events: read outbox: %w", err)
		}
		if len(any) == 0 {
			return nil, nil
		}
	}
	var out []model.Event
	last := c.Last
	top := int64(-1) // the batch's highest id
	err := s.tx(ctx, func(tx *gorm.DB) error {
		rows, err := scanEvents(tx.Raw(`SELECT `+eventCols+` FROM event WHERE seq IS NULL ORDER BY id LIMIT ?`, limit))
		if err != nil {
			return fmt.Errorf("read outbox: %w", err)
		}
		if len(rows) == 0 {
			return nil
		}
		if last < 0 {
			if err := tx.Raw(`SELECT COALESCE(MAX(seq), 0) FROM event`).Scan(&last).Error; err != nil {
				return fmt.Errorf("read last seq: %w", err)
			}
		}
		lo, hi := rows[0].ID, rows[len(rows)-1].ID
		k := max(0, last-lo+1)
		res := tx.Exec(`UPDATE`+orFail(tx)+` event SET seq = id + ? WHERE seq IS NULL AND id BETWEEN ? AND ?`, k, lo, hi)
		if res.Error != nil {
			return fmt.Errorf("number events %d..%d: %w", lo, hi, res.Error)
		}
		if res.RowsAffected != int64(len(rows)) {
			// Rows of the range committed since the read above (MySQL's
			// UPDATE sees them; SQLite's single writer lets none in) were
			// numbered too, still above last and in id order: read them all.
			if rows, err = scanEvents(tx.Raw(`SELECT `+eventCols+` FROM event WHERE seq > ? ORDER BY seq`, last)); err != nil {
				return fmt.Errorf("read numbered events: %w", err)
			}
		} else {
			for i := range rows {
				seq := rows[i].ID + k
				rows[i].Seq = &seq
			}
		}
		out = make([]model.Event, len(rows))
		for i, r := range rows {
			out[i] = r.model()
		}
		last, top = hi+k, hi
		return nil
	})
	if err != nil {
		c.Last, c.Busy = -1, false
		return nil, fmt.Errorf("publish events: %w", err)
	}
	c.Last, c.Busy = last, len(out) > 0
	c.ID = max(c.ID, top)
	return out, nil
}

// handOverEvents is PublishEventsFrom on SQLite: the rows after c.Last,
// already public, in one read on the writing connection (this process's
// appends signal the publisher from inside their transaction: the read
// waits for their commit). A stale term gets ErrFenced, as when numbering.
func (s *Store) handOverEvents(ctx context.Context, c *EventCursor, limit int) ([]model.Event, error) {
	if c.Last < 0 {
		last, err := s.EventLastSeq(ctx)
		if err != nil {
			return nil, fmt.Errorf("publish events: %w", err)
		}
		c.Last, c.ID = last, last
	}
	db := s.db.WithContext(ctx)
	// The limit is written in: SQLite's planner uses a bound LIMIT's value,
	// so it re-prepares the statement at each bind (75 -> 20 µs a read).
	rows, err := scanEvents(db.Raw(`SELECT `+s.eventColsSeq()+` FROM event WHERE id > ? ORDER BY id LIMIT `+strconv.Itoa(limit), c.Last))
	if err != nil {
		return nil, fmt.Errorf("publish events: read outbox after %d: %w", c.Last, err)
	}
	if len(rows) == 0 {
		c.Busy = false
		return nil, nil
	}
	if err := s.checkTerm(db); err != nil {
		c.Last, c.Busy = -1, false
		return nil, fmt.Errorf("publish events: %w", err)
	}
	out := make([]model.Event, len(rows))
	for i, r := range rows {
		out[i] = r.model()
	}
	c.Last, c.Busy = rows[len(rows)-1].ID, true
	c.ID = c.Last
	return out, nil
}

// EventList returns up to limit published events after seq after that pass
// f, in seq order.
func (s *Store) EventList(ctx context.Context, after int64, f model.EventFilter, limit int) ([]model.Event, error) {
	seq := s.seqCol()
	q := s.read(ctx).Table("event").Select(s.eventColsSeq()).Where(seq+" > ?", after)
	if f.Projects != nil {
		if len(f.Projects) == 0 {
			return nil, nil
		}
		q = q.Where("project IN ?", f.Projects)
	}
	if f.Project != "" {
		q = q.Where("project = ?", f.Project)
	}
	if f.Workflow != "" {
		q = q.Where("workflow = ?", f.Workflow)
	}
	if f.Instance != 0 {
		q = q.Where("instance_id = ?", f.Instance)
	}
	if f.Kinds != nil {
		if len(f.Kinds) == 0 {
			return nil, nil
		}
		q = q.Where("kind IN ?", f.Kinds)
	}
	rows, err := scanEvents(q.Order(seq).Limit(limit))
	if err != nil {
		return nil, fmt.Errorf("list events after %d: %w", after, err)
	}
	out := make([]model.Event, len(rows))
	for i, r := range rows {
		out[i] = r.model()
	}
	return out, nil
}

// EventLastSeq is the highest published seq (0: none).
func (s *Store) EventLastSeq(ctx context.Context) (int64, error) {
	var last int64
	if err := s.db.WithContext(ctx).Raw(`SELECT COALESCE(MAX(` + s.seqCol() + `), 0) FROM event`).Scan(&last).Error; err != nil {
		return 0, fmt.Errorf("read last event seq: %w", err)
	}
	return last, nil
}

// EventPrune deletes published events older than before, and when keep > 0
// all but the newest keep published ones, plus deliveries older than
// before. The newest published event always stays, so the next seq follows
// on. It returns the events deleted.
func (s *Store) EventPrune(ctx context.Context, before time.Time, keep int64) (int64, error) {
	db := s.db.WithContext(ctx)
	last, err := s.EventLastSeq(ctx)
	if err != nil || last == 0 {
		return 0, err
	}
	cut := last // delete seq < cut
	var old int64
	seq := s.seqCol()
	if err := db.Raw(`SELECT COALESCE(MAX(`+seq+`), 0) FROM event WHERE `+seq+` IS NOT NULL AND time < ?`, before.UTC()).Scan(&old).Error; err != nil {
		return 0, fmt.Errorf("prune events: %w", err)
	}
	lim := old + 1
	if keep > 0 && last-keep+1 > lim {
		lim = last - keep + 1
	}
	cut = min(cut, lim)
	res := db.Exec(`DELETE FROM event WHERE `+seq+` < ?`, cut)
	if res.Error != nil {
		return 0, fmt.Errorf("prune events below %d: %w", cut, res.Error)
	}
	if err := db.Exec(`DELETE FROM delivery WHERE time < ?`, before.UTC()).Error; err != nil {
		return res.RowsAffected, fmt.Errorf("prune deliveries: %w", err)
	}
	return res.RowsAffected, nil
}

func instanceIDs(is []model.WorkflowInstance) []int64 {
	out := make([]int64, len(is))
	for i, w := range is {
		out[i] = w.ID
	}
	return out
}

func taskRowIDs(rows []taskInstanceRow) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r.ID
	}
	return out
}

func dispatchedIDs(ds []model.Dispatch, ok []bool) []int64 {
	var out []int64
	for i, d := range ds {
		if ok[i] {
			out = append(out, d.ID)
		}
	}
	return out
}

// appliedIDs are the tasks whose state a report moved: an ack only records
// the log path of a task already dispatched.
func appliedIDs(rs []model.Report, out []model.ReportOutcome) []int64 {
	var ids []int64
	for i, r := range rs {
		if out[i] == model.ReportApplied && r.Kind != model.ReportAck {
			ids = append(ids, r.ID)
		}
	}
	return ids
}
