package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"gorm.io/gorm"

	"github.com/beluga-scheduler/beluga/common/dataset"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/spec"
)

// Data-aware scheduling (0052_datasets.sql). A task's success writes the
// partitions it produces in the transaction that records the success
// (produceTx, from TaskApplyReports); the leader then decides, one event
// at a time in a fenced transaction, which consumer partitions become
// ready and writes their runs with their ledger rows (DatasetEvaluate).

// ProducesParam is the param a task attempt's resolved produces entries
// travel in (dataset@partition, comma separated): the runner writes it
// with the attempt, the success reads it back.
const ProducesParam = "BELUGA_PRODUCES"

// ProducesOutput is the output a task sets to produce partitions itself
// (${setValue(produces=ds@2026-12-07)}), as a comma separated list.
const ProducesOutput = "produces"

// ErrBadDataset marks an event whose dataset name, partition or key is
// malformed (the API checks first and answers 400).
var ErrBadDataset = errors.New("bad dataset event")

// Roles of a dataset_ref row.
const (
	refConsumes = "consumes"
	refProduces = "produces"
)

type datasetRefRow struct {
	ID           int64
	ProjectID    int64
	WorkflowName string
	Dataset      string
	Role         string
	Grain        string
	LateData     string
	RunGrain     string
	TaskName     string
}

func (datasetRefRow) TableName() string { return "dataset_ref" }

type datasetEventRow struct {
	ID             int64
	ProjectID      int64
	Dataset        string
	PartitionKey   string
	Producer       string
	TaskInstanceID *int64
	RunID          *int64
	ProducedBy     string
	ProducedAt     time.Time
	Evaluated      bool
}

func (datasetEventRow) TableName() string { return "dataset_event" }

func (r datasetEventRow) model() model.DatasetEvent {
	return model.DatasetEvent{ID: r.ID, Dataset: r.Dataset, Partition: r.PartitionKey, Producer: r.Producer,
		TaskInstanceID: deref(r.TaskInstanceID), RunID: deref(r.RunID), ProducedBy: r.ProducedBy,
		ProducedAt: r.ProducedAt.UTC(), Evaluated: r.Evaluated}
}

type datasetFireRow struct {
	ID             int64
	ProjectID      int64
	WorkflowName   string
	PartitionKey   string
	DedupeKey      *string
	EventID        int64
	CoveredEventID int64
	Outcome        string
	Reason         string
	RunID          *int64
	FiredAt        time.Time
}

func (datasetFireRow) TableName() string { return "dataset_fire" }

func (r datasetFireRow) model() model.DatasetFire {
	return model.DatasetFire{ID: r.ID, Workflow: r.WorkflowName, Partition: r.PartitionKey, EventID: r.EventID,
		CoveredEventID: r.CoveredEventID, Outcome: r.Outcome, Rerun: r.DedupeKey != nil && strings.Contains(*r.DedupeKey, "#"),
		Reason: r.Reason, RunID: deref(r.RunID), FiredAt: r.FiredAt.UTC()}
}

// writeDatasetRefs replaces what workflow w declares about datasets by
// what its new version says.
func writeDatasetRefs(tx *gorm.DB, projectID int64, w *spec.Workflow) error {
	if err := tx.Where("project_id = ? AND workflow_name = ?", projectID, w.Name).Delete(&datasetRefRow{}).Error; err != nil {
		return fmt.Errorf("clear the dataset refs of %q: %w", w.Name, err)
	}
	var rows []datasetRefRow
	late := w.LateData
	if late == "" {
		late = dataset.LateIgnore
	}
	ins := make([]dataset.Input, 0, len(w.OnDatasets))
	for _, e := range w.OnDatasets {
		in, err := dataset.ParseInput(e)
		if err != nil {
			return fmt.Errorf("workflow %q: %w", w.Name, err) // validated before: a spec stored past the checks
		}
		ins = append(ins, in)
	}
	runGrain := string(dataset.RunGrain(ins, dataset.Grain(w.RunGrain)))
	for _, in := range ins {
		rows = append(rows, datasetRefRow{ProjectID: projectID, WorkflowName: w.Name, Dataset: in.Dataset, Role: refConsumes,
			Grain: string(in.Grain), LateData: late, RunGrain: runGrain})
	}
	for _, t := range w.Tasks {
		for _, p := range t.Produces {
			name, _, _ := strings.Cut(p, "@")
			rows = append(rows, datasetRefRow{ProjectID: projectID, WorkflowName: w.Name, Dataset: name, Role: refProduces, TaskName: t.Name})
		}
	}
	if len(rows) == 0 {
		return nil
	}
	if err := tx.Create(&rows).Error; err != nil {
		return fmt.Errorf("write the dataset refs of %q: %w", w.Name, err)
	}
	return nil
}

// deleteDatasetRefs removes a deleted workflow's refs and ledger; the
// events its tasks produced stay (the data exists).
func deleteDatasetRefs(tx *gorm.DB, projectID int64, workflow string) error {
	if err := tx.Where("project_id = ? AND workflow_name = ?", projectID, workflow).Delete(&datasetRefRow{}).Error; err != nil {
		return fmt.Errorf("delete the dataset refs of %q: %w", workflow, err)
	}
	if err := tx.Where("project_id = ? AND workflow_name = ?", projectID, workflow).Delete(&datasetFireRow{}).Error; err != nil {
		return fmt.Errorf("delete the dataset fires of %q: %w", workflow, err)
	}
	return nil
}

// produceTx writes the partitions produced by the tasks whose success tx
// just recorded: those their attempt's params declare (ProducesParam) and
// those they set as output (ProducesOutput). One read for the batch; the
// unique index makes a re-applied success write nothing twice. A bad
// output entry is skipped, not a failed batch: the success stands.
func produceTx(tx *gorm.DB, ids []int64, outputs map[int64]string) error {
	if len(ids) == 0 {
		return nil
	}
	type row struct {
		ID                 int64
		WorkflowInstanceID int64
		ParamsJSON         *string
		ProjectID          int64
	}
	// One constant statement (cheap to run per report batch): the task
	// ids, then those with a produces output.
	like := "%\"" + ProducesParam + "\"%"
	withOut := make([]int64, 0, len(outputs)+1)
	for id := range outputs {
		withOut = append(withOut, id)
	}
	if len(withOut) == 0 {
		withOut = append(withOut, 0) // no task has id 0
	}
	rs, err := tx.Raw(`SELECT t.id, t.workflow_instance_id, t.params_json, w.project_id FROM task_instance t `+
		`JOIN workflow_instance w ON w.id = t.workflow_instance_id WHERE t.id IN ? AND (t.params_json LIKE ? OR t.id IN ?)`,
		ids, like, withOut).Rows()
	if err != nil {
		return fmt.Errorf("read what tasks %v produce: %w", ids, err)
	}
	var rows []row
	for rs.Next() {
		var r row
		if err := rs.Scan(&r.ID, &r.WorkflowInstanceID, &r.ParamsJSON, &r.ProjectID); err != nil {
			rs.Close()
			return fmt.Errorf("read what tasks %v produce: %w", ids, err)
		}
		rows = append(rows, r)
	}
	if err := rs.Close(); err != nil {
		return fmt.Errorf("read what tasks %v produce: %w", ids, err)
	}
	now := now6()
	var events []datasetEventRow
	for _, r := range rows {
		var refs []dataset.Ref
		if r.ParamsJSON != nil {
			var ps map[string]string
			if json.Unmarshal([]byte(*r.ParamsJSON), &ps) == nil && ps[ProducesParam] != "" {
				refs, _ = dataset.ParseRefs(ps[ProducesParam]) // written by the runner from checked entries
			}
		}
		if o, ok := outputs[r.ID]; ok {
			more, _ := dataset.ParseRefs(o)
			refs = append(refs, more...)
		}
		seen := map[dataset.Ref]bool{}
		for _, ref := range refs {
			if seen[ref] {
				continue
			}
			seen[ref] = true
			tid, run := r.ID, r.WorkflowInstanceID
			events = append(events, datasetEventRow{ProjectID: r.ProjectID, Dataset: ref.Dataset, PartitionKey: ref.Partition,
				Producer: "task:" + strconv.FormatInt(r.ID, 10), TaskInstanceID: &tid, RunID: &run, ProducedAt: now})
		}
	}
	for i := range events {
		if err := insertEvent(tx, &events[i]); err != nil {
			return err
		}
	}
	return nil
}

// insertEvent writes one event unless its producer wrote it already.
func insertEvent(tx *gorm.DB, e *datasetEventRow) error {
	var n int64
	if err := tx.Model(&datasetEventRow{}).Where("project_id = ? AND dataset = ? AND partition_key = ? AND producer = ?",
		e.ProjectID, e.Dataset, e.PartitionKey, e.Producer).Count(&n).Error; err != nil {
		return fmt.Errorf("look up the event of %s@%s: %w", e.Dataset, e.PartitionKey, err)
	}
	if n > 0 {
		return nil
	}
	if err := tx.Create(e).Error; err != nil {
		return fmt.Errorf("record %s@%s produced: %w", e.Dataset, e.PartitionKey, err)
	}
	return nil
}

// DatasetEmit is an event posted from outside.
type DatasetEmit struct {
	Project   string
	Dataset   string
	Partition string // any layout dataset.NormalizePartition takes
	Key       string // Idempotency-Key; "": each post is a new event
	By        string // the user
}

// DatasetEmit records a partition produced outside Beluga. A key already
// posted for the partition answers that event, with duplicate true.
func (s *Store) DatasetEmit(ctx context.Context, e DatasetEmit) (ev model.DatasetEvent, duplicate bool, err error) {
	if !dataset.ValidName(e.Dataset) {
		return ev, false, fmt.Errorf("dataset %q: %s: %w", e.Dataset, dataset.NameRule, ErrBadDataset)
	}
	key, _, err := dataset.NormalizePartition(e.Partition)
	if err != nil {
		return ev, false, fmt.Errorf("%w: %w", err, ErrBadDataset)
	}
	producer := "ext:" + e.Key
	if e.Key == "" {
		producer = "ext:" + strconv.FormatInt(time.Now().UnixNano(), 36)
	}
	if len(producer) > 255 {
		return ev, false, fmt.Errorf("Idempotency-Key is longer than 250 bytes: %w", ErrBadDataset)
	}
	var projectID int64
	err = s.db.WithContext(ctx).Transaction(func(tx *gorm.DB) error {
		p, err := getProject(tx, e.Project)
		if err != nil {
			return err
		}
		projectID = p.ID
		var prev datasetEventRow
		err = tx.Where("project_id = ? AND dataset = ? AND partition_key = ? AND producer = ?", p.ID, e.Dataset, key, producer).Take(&prev).Error
		if err == nil {
			ev, duplicate = prev.model(), true
			return nil
		}
		if !errors.Is(err, gorm.ErrRecordNotFound) {
			return fmt.Errorf("look up event %q: %w", e.Key, err)
		}
		r := datasetEventRow{ProjectID: p.ID, Dataset: e.Dataset, PartitionKey: key, Producer: producer, ProducedBy: e.By, ProducedAt: now6()}
		if err := tx.Create(&r).Error; err != nil {
			if isUniqueViolation(err) {
				return errDuplicateDelivery // a racing post with the key won
			}
			return fmt.Errorf("record %s@%s: %w", e.Dataset, key, err)
		}
		ev = r.model()
		return nil
	})
	if errors.Is(err, errDuplicateDelivery) {
		var prev datasetEventRow
		if err := s.db.WithContext(ctx).Where("project_id = ? AND dataset = ? AND partition_key = ? AND producer = ?", projectID, e.Dataset, key, producer).
			Take(&prev).Error; err != nil {
			return ev, false, fmt.Errorf("read the event of key %q: %w", e.Key, err)
		}
		return prev.model(), true, nil
	}
	return ev, duplicate, err
}

// DatasetList returns the datasets of a project: each named by a spec or
// an event, with its producers, consumers and partitions.
func (s *Store) DatasetList(ctx context.Context, project string) ([]model.Dataset, error) {
	db := s.db.WithContext(ctx)
	p, err := getProject(db, project)
	if err != nil {
		return nil, err
	}
	var refs []datasetRefRow
	if err := db.Where("project_id = ?", p.ID).Order("dataset, workflow_name, task_name").Find(&refs).Error; err != nil {
		return nil, fmt.Errorf("list dataset refs of %q: %w", project, err)
	}
	type agg struct {
		Dataset string
		N       int
		Last    string
		LastID  int64
	}
	var aggs []agg
	// MAX of a time column is text on SQLite: the newest event's time is
	// read by its id.
	if err := db.Model(&datasetEventRow{}).Select("dataset, COUNT(DISTINCT partition_key) AS n, MAX(partition_key) AS last, MAX(id) AS last_id").
		Where("project_id = ?", p.ID).Group("dataset").Scan(&aggs).Error; err != nil {
		return nil, fmt.Errorf("count the partitions of %q: %w", project, err)
	}
	lastIDs := make([]int64, len(aggs))
	for i, a := range aggs {
		lastIDs[i] = a.LastID
	}
	var lasts []datasetEventRow
	if len(lastIDs) > 0 {
		if err := db.Select("id, produced_at").Where("id IN ?", lastIDs).Find(&lasts).Error; err != nil {
			return nil, fmt.Errorf("read the newest events of %q: %w", project, err)
		}
	}
	at := make(map[int64]time.Time, len(lasts))
	for _, e := range lasts {
		at[e.ID] = e.ProducedAt.UTC()
	}
	byName := map[string]*model.Dataset{}
	get := func(n string) *model.Dataset {
		d := byName[n]
		if d == nil {
			d = &model.Dataset{Name: n, Producers: []model.DatasetProducer{}, Consumers: []model.DatasetConsumer{}}
			byName[n] = d
		}
		return d
	}
	for _, r := range refs {
		addRef(get(r.Dataset), r)
	}
	for _, a := range aggs {
		d := get(a.Dataset)
		d.Partitions, d.LastPartition = a.N, a.Last
		if t, ok := at[a.LastID]; ok {
			d.LastEventAt = &t
		}
	}
	out := make([]model.Dataset, 0, len(byName))
	for _, d := range byName {
		out = append(out, *d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func addRef(d *model.Dataset, r datasetRefRow) {
	if r.Role == refConsumes {
		d.Consumers = append(d.Consumers, model.DatasetConsumer{Workflow: r.WorkflowName, Grain: r.Grain, LateData: r.LateData,
			RunGrain: r.RunGrain})
		return
	}
	d.Producers = append(d.Producers, model.DatasetProducer{Workflow: r.WorkflowName, Task: r.TaskName})
}

// DatasetGet returns a dataset with its newest partitions (up to limit)
// and their events; a name no spec or event knows is ErrNotFound.
func (s *Store) DatasetGet(ctx context.Context, project, name string, limit int) (model.DatasetDetail, error) {
	var out model.DatasetDetail
	db := s.db.WithContext(ctx)
	p, err := getProject(db, project)
	if err != nil {
		return out, err
	}
	out.Name, out.Producers, out.Consumers, out.PartitionList = name, []model.DatasetProducer{}, []model.DatasetConsumer{}, []model.DatasetPartition{}
	var refs []datasetRefRow
	if err := db.Where("project_id = ? AND dataset = ?", p.ID, name).Order("workflow_name, task_name").Find(&refs).Error; err != nil {
		return out, fmt.Errorf("read the refs of dataset %q: %w", name, err)
	}
	for _, r := range refs {
		addRef(&out.Dataset, r)
	}
	var keys []string
	if err := db.Model(&datasetEventRow{}).Distinct("partition_key").Where("project_id = ? AND dataset = ?", p.ID, name).
		Order("partition_key DESC").Limit(limit).Pluck("partition_key", &keys).Error; err != nil {
		return out, fmt.Errorf("read the partitions of dataset %q: %w", name, err)
	}
	if len(refs) == 0 && len(keys) == 0 {
		return out, fmt.Errorf("dataset %q in project %q: %w", name, project, ErrNotFound)
	}
	var n int64
	if err := db.Model(&datasetEventRow{}).Where("project_id = ? AND dataset = ?", p.ID, name).Distinct("partition_key").Count(&n).Error; err != nil {
		return out, fmt.Errorf("count the partitions of dataset %q: %w", name, err)
	}
	out.Partitions = int(n)
	if len(keys) == 0 {
		return out, nil
	}
	out.LastPartition = keys[0]
	var evs []datasetEventRow
	if err := db.Where("project_id = ? AND dataset = ? AND partition_key IN ?", p.ID, name, keys).Order("id").Find(&evs).Error; err != nil {
		return out, fmt.Errorf("read the events of dataset %q: %w", name, err)
	}
	at := map[string]int{}
	for _, k := range keys {
		at[k] = len(out.PartitionList)
		out.PartitionList = append(out.PartitionList, model.DatasetPartition{Key: k})
	}
	for _, e := range evs {
		i := at[e.PartitionKey]
		out.PartitionList[i].Events = append(out.PartitionList[i].Events, e.model())
		if t := e.ProducedAt.UTC(); out.LastEventAt == nil || t.After(*out.LastEventAt) {
			out.LastEventAt = &t
		}
	}
	return out, nil
}

// DatasetFires returns a consumer's ledger, newest first, up to limit.
func (s *Store) DatasetFires(ctx context.Context, project, workflow string, limit int) ([]model.DatasetFire, error) {
	db := s.db.WithContext(ctx)
	p, err := getProject(db, project)
	if err != nil {
		return nil, err
	}
	var rows []datasetFireRow
	if err := db.Where("project_id = ? AND workflow_name = ?", p.ID, workflow).Order("id DESC").Limit(limit).Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("list the dataset fires of %q: %w", workflow, err)
	}
	out := make([]model.DatasetFire, len(rows))
	for i, r := range rows {
		out[i] = r.model()
	}
	return out, nil
}

// RunDatasets returns a run's lineage: the partitions the fire that
// started it waited for, and those its tasks produced.
func (s *Store) RunDatasets(ctx context.Context, runID int64) (model.RunDatasets, error) {
	out := model.RunDatasets{RunID: runID, WaitedFor: []model.DatasetInput{}, Produced: []model.DatasetEvent{}}
	db := s.db.WithContext(ctx)
	var inst workflowInstanceRow
	if err := db.Select("id, project_id, workflow_name").Take(&inst, runID).Error; err != nil {
		return out, notFound(err, fmt.Sprintf("run %d", runID))
	}
	var evs []datasetEventRow
	if err := db.Where("run_id = ?", runID).Order("id").Find(&evs).Error; err != nil {
		return out, fmt.Errorf("read what run %d produced: %w", runID, err)
	}
	for _, e := range evs {
		out.Produced = append(out.Produced, e.model())
	}
	var fire datasetFireRow
	err := db.Where("run_id = ?", runID).Take(&fire).Error
	if errors.Is(err, gorm.ErrRecordNotFound) {
		return out, nil
	}
	if err != nil {
		return out, fmt.Errorf("read the dataset fire of run %d: %w", runID, err)
	}
	f := fire.model()
	out.Fire = &f
	var ins []datasetRefRow
	if err := db.Where("project_id = ? AND workflow_name = ? AND role = ?", inst.ProjectID, inst.WorkflowName, refConsumes).
		Order("dataset").Find(&ins).Error; err != nil {
		return out, fmt.Errorf("read the inputs of run %d: %w", runID, err)
	}
	for _, r := range ins {
		in := dataset.Input{Dataset: r.Dataset, Grain: dataset.Grain(r.Grain)}
		need := dataset.Needed(in, fire.PartitionKey)
		ready, err := readyAt(db, inst.ProjectID, in.Dataset, need, fire.CoveredEventID)
		if err != nil {
			return out, err
		}
		for _, k := range need {
			di := model.DatasetInput{Dataset: r.Dataset, Partition: k}
			if at, ok := ready[k]; ok {
				di.Produced, di.ReadyAt = true, &at
			}
			out.WaitedFor = append(out.WaitedFor, di)
		}
	}
	return out, nil
}

// readyAt is when each of keys of a dataset was first produced, among
// the events with id at most upTo (when upTo > 0): the time the run's input was ready.
func readyAt(db *gorm.DB, projectID int64, ds string, keys []string, upTo int64) (map[string]time.Time, error) {
	q := db.Select("partition_key, produced_at").Where("project_id = ? AND dataset = ? AND partition_key IN ?", projectID, ds, keys)
	if upTo > 0 {
		q = q.Where("id <= ?", upTo)
	}
	var rows []datasetEventRow
	if err := q.Order("id").Find(&rows).Error; err != nil {
		return nil, fmt.Errorf("read the partitions of %q: %w", ds, err)
	}
	at := make(map[string]time.Time, len(rows))
	for _, r := range rows {
		if _, ok := at[r.PartitionKey]; !ok {
			at[r.PartitionKey] = r.ProducedAt.UTC()
		}
	}
	return at, nil
}

// producedKeys says which of keys of a dataset have an event (with id at
// most upTo, when upTo > 0).
func producedKeys(db *gorm.DB, projectID int64, ds string, keys []string, upTo int64) (map[string]bool, error) {
	q := db.Model(&datasetEventRow{}).Distinct("partition_key").Where("project_id = ? AND dataset = ? AND partition_key IN ?", projectID, ds, keys)
	if upTo > 0 {
		q = q.Where("id <= ?", upTo)
	}
	var got []string
	if err := q.Pluck("partition_key", &got).Error; err != nil {
		return nil, fmt.Errorf("read the partitions of %q: %w", ds, err)
	}
	have := make(map[string]bool, len(got))
	for _, k := range got {
		have[k] = true
	}
	return have, nil
}

// DatasetPending returns the ids of events the leader has not evaluated,
// oldest first, up to limit.
func (s *Store) DatasetPending(ctx context.Context, limit int) ([]int64, error) {
	var ids []int64
	if err := s.db.WithContext(ctx).Model(&datasetEventRow{}).Where("evaluated = ?", false).Order("id").Limit(limit).Pluck("id", &ids).Error; err != nil {
		return nil, fmt.Errorf("list unevaluated dataset events: %w", err)
	}
	return ids, nil
}

// DatasetEvaluate decides what one event starts, in one fenced
// transaction: for each workflow consuming its dataset, the run partition
// it counts towards gets its first run once every input is produced
// (ledger row deduped on the partition), or, produced again after that,
// a rerun or an ignored row by the workflow's late_data; the event is
// then marked evaluated. A run refused (its workflow's params) is a
// ledger row with the reason. Evaluating an event twice changes nothing.
func (s *Store) DatasetEvaluate(ctx context.Context, eventID int64) ([]model.DatasetFire, error) {
	var out []model.DatasetFire
	err := s.tx(ctx, func(tx *gorm.DB) error {
		out = nil
		var ev datasetEventRow
		if err := lockingRead(tx).Take(&ev, eventID).Error; err != nil {
			return notFound(err, fmt.Sprintf("dataset event %d", eventID))
		}
		if ev.Evaluated {
			return nil
		}
		var consumers []datasetRefRow
		if err := tx.Where("project_id = ? AND dataset = ? AND role = ?", ev.ProjectID, ev.Dataset, refConsumes).
			Order("workflow_name").Find(&consumers).Error; err != nil {
			return fmt.Errorf("read the consumers of %q: %w", ev.Dataset, err)
		}
		for _, c := range consumers {
			f, ok, err := s.evaluateFor(tx, ev, c.WorkflowName, c.LateData)
			if err != nil {
				return err
			}
			if ok {
				out = append(out, f)
			}
		}
		if err := tx.Model(&datasetEventRow{}).Where("id = ?", ev.ID).Update("evaluated", true).Error; err != nil {
			return fmt.Errorf("mark dataset event %d evaluated: %w", ev.ID, err)
		}
		return nil
	})
	return out, err
}

// evaluateFor decides what event ev means for consumer workflow wf.
func (s *Store) evaluateFor(tx *gorm.DB, ev datasetEventRow, wf, late string) (model.DatasetFire, bool, error) {
	var refs []datasetRefRow
	if err := tx.Where("project_id = ? AND workflow_name = ? AND role = ?", ev.ProjectID, wf, refConsumes).Find(&refs).Error; err != nil {
		return model.DatasetFire{}, false, fmt.Errorf("read the inputs of %q: %w", wf, err)
	}
	ins := make([]dataset.Input, len(refs))
	for i, r := range refs {
		ins[i] = dataset.Input{Dataset: r.Dataset, Grain: dataset.Grain(r.Grain)}
	}
	g := dataset.RunGrain(ins, dataset.Grain(refs[0].RunGrain))
	part, ok := dataset.RunPartition(ev.PartitionKey, g)
	if !ok {
		return model.DatasetFire{}, false, nil
	}
	var last datasetFireRow
	err := tx.Where("project_id = ? AND workflow_name = ? AND partition_key = ?", ev.ProjectID, wf, part).Order("id DESC").Take(&last).Error
	first := errors.Is(err, gorm.ErrRecordNotFound)
	if err != nil && !first {
		return model.DatasetFire{}, false, fmt.Errorf("read the ledger of %q at %s: %w", wf, part, err)
	}
	if !first && ev.ID <= last.CoveredEventID {
		return model.DatasetFire{}, false, nil // the last decision saw it
	}
	if first {
		for _, in := range ins {
			need := dataset.Needed(in, part)
			have, err := producedKeys(tx, ev.ProjectID, in.Dataset, need, 0)
			if err != nil {
				return model.DatasetFire{}, false, err
			}
			if len(have) < len(need) {
				return model.DatasetFire{}, false, nil // not ready yet
			}
		}
	}
	// The decision covers every input event visible now: re-produces
	// seen together make one rerun, not one each.
	covered := ev.ID
	var maxID *int64
	names := make([]string, len(ins))
	for i, in := range ins {
		names[i] = in.Dataset
	}
	if err := tx.Model(&datasetEventRow{}).Select("MAX(id)").Where("project_id = ? AND dataset IN ?", ev.ProjectID, names).Scan(&maxID).Error; err != nil {
		return model.DatasetFire{}, false, fmt.Errorf("read the newest input event of %q: %w", wf, err)
	}
	if maxID != nil && *maxID > covered {
		covered = *maxID
	}
	now := now6()
	r := datasetFireRow{ProjectID: ev.ProjectID, WorkflowName: wf, PartitionKey: part, EventID: ev.ID, CoveredEventID: covered, FiredAt: now}
	key := part
	switch {
	case first:
		r.Outcome, r.Reason = model.DatasetFired, "every input of "+part+" is produced"
	case late == dataset.LateRerun:
		key = part + "#" + strconv.FormatInt(ev.ID, 10)
		r.Outcome, r.Reason = model.DatasetFired, fmt.Sprintf("%s@%s produced again (late_data: rerun)", ev.Dataset, ev.PartitionKey)
	default:
		r.Outcome, r.Reason = model.DatasetIgnored, fmt.Sprintf("%s@%s produced again (late_data: ignore)", ev.Dataset, ev.PartitionKey)
	}
	if r.Outcome == model.DatasetFired {
		r.DedupeKey = &key
	}
	if err := tx.Create(&r).Error; err != nil {
		if isUniqueViolation(err) {
			return model.DatasetFire{}, false, nil // decided already
		}
		return model.DatasetFire{}, false, fmt.Errorf("record the dataset fire of %q at %s: %w", wf, part, err)
	}
	if r.Outcome != model.DatasetFired {
		return r.model(), true, nil
	}
	var p projectRow
	if err := tx.Take(&p, ev.ProjectID).Error; err != nil {
		return model.DatasetFire{}, false, notFound(err, fmt.Sprintf("project %d", ev.ProjectID))
	}
	req := RunRequest{Project: p.Name, Workflow: wf, Params: dataset.RunParams(part), CommandType: model.CommandDataset}
	inst, err := s.datasetRun(tx, req, now)
	if err != nil {
		r.Reason = clip("run refused: "+err.Error(), 1024)
		r.DedupeKey = nil // refused: nothing ran, the ledger says why
		if err := tx.Model(&r).Select("reason", "dedupe_key").Updates(&r).Error; err != nil {
			return model.DatasetFire{}, false, fmt.Errorf("record the refused run of %q at %s: %w", wf, part, err)
		}
		return r.model(), true, nil
	}
	r.RunID = &inst
	if err := tx.Model(&r).Update("run_id", inst).Error; err != nil {
		return model.DatasetFire{}, false, fmt.Errorf("record the run of dataset fire %d: %w", r.ID, err)
	}
	return r.model(), true, nil
}

// datasetRun writes a run and its start command in a savepoint, so a
// refused run leaves the ledger row and the event's evaluation standing.
func (s *Store) datasetRun(tx *gorm.DB, req RunRequest, now time.Time) (int64, error) {
	var id int64
	err := tx.Transaction(func(tx *gorm.DB) error {
		p, def, err := runTarget(tx, req)
		if err != nil {
			return err
		}
		inst, err := insertRun(tx, s.box, p, def, req, now)
		id = inst.ID
		return err
	})
	return id, err
}
