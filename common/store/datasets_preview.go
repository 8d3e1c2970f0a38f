package store

import (
	"context"
	"errors"
	"fmt"

	"gorm.io/gorm"

	"github.com/beluga-scheduler/beluga/common/dataset"
	"github.com/beluga-scheduler/beluga/common/model"
)

// DatasetDecision is what an event posted now would mean for one
// consumer workflow (DatasetEmitPreview).
type DatasetDecision struct {
	Workflow  string
	Partition string // the consumer's run partition ("" when it counts towards none)
	// Outcome is model.DatasetFired (a first run or a rerun),
	// model.DatasetIgnored, or "" (nothing: Reason says why).
	Outcome string
	Rerun   bool // a fired decision's: a rerun of a partition that ran
	Reason  string
}

// errPreviewDone rolls back a preview's transaction.
var errPreviewDone = errors.New("preview done")

// DatasetEmitPreview answers what posting e now would start, deciding it
// as the leader's evaluator would (evaluateFor), in a transaction that is
// rolled back: the event, ledger rows and runs it writes never persist.
// It is the ground of a dataset event's plan; an apply compares the
// decisions again.
func (s *Store) DatasetEmitPreview(ctx context.Context, e DatasetEmit) ([]DatasetDecision, error) {
	return s.emitPreview(s.db.WithContext(ctx), e)
}

// emitPreview decides e in db, in a transaction of its own (a savepoint
// when db is one) that is always rolled back.
func (s *Store) emitPreview(db *gorm.DB, e DatasetEmit) ([]DatasetDecision, error) {
	if !dataset.ValidName(e.Dataset) {
		return nil, fmt.Errorf("dataset %q: %s: %w", e.Dataset, dataset.NameRule, ErrBadDataset)
	}
	key, _, err := dataset.NormalizePartition(e.Partition)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", err, ErrBadDataset)
	}
	var out []DatasetDecision
	err = db.Transaction(func(tx *gorm.DB) error {
		out = []DatasetDecision{}
		p, err := getProject(tx, e.Project)
		if err != nil {
			return err
		}
		ev := datasetEventRow{ProjectID: p.ID, Dataset: e.Dataset, PartitionKey: key, Producer: "preview:" + e.Key,
			ProducedBy: e.By, ProducedAt: now6()}
		if err := tx.Create(&ev).Error; err != nil {
			return fmt.Errorf("preview %s@%s: %w", e.Dataset, key, err)
		}
		var consumers []datasetRefRow
		if err := tx.Where("project_id = ? AND dataset = ? AND role = ?", p.ID, e.Dataset, refConsumes).
			Order("workflow_name").Find(&consumers).Error; err != nil {
			return fmt.Errorf("read the consumers of %q: %w", e.Dataset, err)
		}
		for _, c := range consumers {
			f, ok, err := s.evaluateFor(tx, ev, c.WorkflowName, c.LateData)
			if err != nil {
				return err
			}
			if ok {
				d := DatasetDecision{Workflow: c.WorkflowName, Partition: f.Partition, Outcome: f.Outcome, Rerun: f.Rerun, Reason: f.Reason}
				if f.Outcome == model.DatasetFired && f.RunID == 0 {
					d.Outcome = "" // refused: Reason says why
				}
				out = append(out, d)
				continue
			}
			d, err := whyNothing(tx, ev, c)
			if err != nil {
				return err
			}
			out = append(out, d)
		}
		return errPreviewDone
	})
	if errors.Is(err, errPreviewDone) {
		err = nil
	}
	return out, err
}

// whyNothing says why evaluateFor decided nothing for consumer c of ev.
func whyNothing(tx *gorm.DB, ev datasetEventRow, c datasetRefRow) (DatasetDecision, error) {
	d := DatasetDecision{Workflow: c.WorkflowName}
	var refs []datasetRefRow
	if err := tx.Where("project_id = ? AND workflow_name = ? AND role = ?", ev.ProjectID, c.WorkflowName, refConsumes).Find(&refs).Error; err != nil {
		return d, fmt.Errorf("read the inputs of %q: %w", c.WorkflowName, err)
	}
	ins := make([]dataset.Input, len(refs))
	for i, r := range refs {
		ins[i] = dataset.Input{Dataset: r.Dataset, Grain: dataset.Grain(r.Grain)}
	}
	part, ok := dataset.RunPartition(ev.PartitionKey, dataset.RunGrain(ins, dataset.Grain(refs[0].RunGrain)))
	if !ok {
		d.Reason = fmt.Sprintf("%s@%s counts towards no partition of its runs", ev.Dataset, ev.PartitionKey)
		return d, nil
	}
	d.Partition = part
	var n int64
	if err := tx.Model(&datasetFireRow{}).Where("project_id = ? AND workflow_name = ? AND partition_key = ?",
		ev.ProjectID, c.WorkflowName, part).Count(&n).Error; err != nil {
		return d, fmt.Errorf("read the ledger of %q at %s: %w", c.WorkflowName, part, err)
	}
	if n > 0 {
		d.Reason = "already decided: " + part + " ran or was decided with this input seen"
		return d, nil
	}
	d.Reason = "inputs not all ready: " + part + " waits on a partition not yet produced"
	return d, nil
}
