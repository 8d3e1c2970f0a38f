package store

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"gorm.io/gorm"

	"github.com/beluga-scheduler/beluga/common/dataset"
)

// datasetEventsToPurge lists (ascending) the dataset events of project
// produced before before that no decision needs any more: evaluated, and,
// for every workflow consuming its dataset, the run partition it counts
// towards has a ledger row whose decision saw it (covered_event_id at or
// above it). A partition not yet decided keeps its events, since its first
// decision reads them all (the inputs-ready check of evaluateFor).
func datasetEventsToPurge(db *gorm.DB, projectID int64, before time.Time) ([]int64, error) {
	var refs []datasetRefRow
	if err := db.Where("project_id = ? AND role = ?", projectID, refConsumes).Find(&refs).Error; err != nil {
		return nil, fmt.Errorf("read the dataset consumers: %w", err)
	}
	byWF := map[string][]datasetRefRow{}
	for _, r := range refs {
		byWF[r.WorkflowName] = append(byWF[r.WorkflowName], r)
	}
	type consumer struct {
		wf    string
		grain dataset.Grain
	}
	byDS := map[string][]consumer{}
	for wf, rs := range byWF {
		ins := make([]dataset.Input, len(rs))
		for i, r := range rs {
			ins[i] = dataset.Input{Dataset: r.Dataset, Grain: dataset.Grain(r.Grain)}
		}
		g := dataset.RunGrain(ins, dataset.Grain(rs[0].RunGrain))
		for _, r := range rs {
			byDS[r.Dataset] = append(byDS[r.Dataset], consumer{wf: wf, grain: g})
		}
	}
	out := []int64{}
	after := int64(0)
	for {
		var evs []datasetEventRow
		if err := db.Select("id, dataset, partition_key").
			Where("project_id = ? AND evaluated = ? AND produced_at < ? AND id > ?", projectID, true, before, after).
			Order("id").Limit(retentionChunk).Find(&evs).Error; err != nil {
			return nil, fmt.Errorf("read old dataset events: %w", err)
		}
		if len(evs) == 0 {
			return out, nil
		}
		after = evs[len(evs)-1].ID
		// The run partitions each consumer's decisions are read for.
		parts := map[string]map[string]bool{}
		for _, e := range evs {
			for _, c := range byDS[e.Dataset] {
				if p, ok := dataset.RunPartition(e.PartitionKey, c.grain); ok {
					if parts[c.wf] == nil {
						parts[c.wf] = map[string]bool{}
					}
					parts[c.wf][p] = true
				}
			}
		}
		covered := map[string]map[string]int64{} // workflow, partition: newest event decided
		for wf, ps := range parts {
			keys := make([]string, 0, len(ps))
			for p := range ps {
				keys = append(keys, p)
			}
			var rows []struct {
				PartitionKey string
				Covered      int64
			}
			if err := db.Table("dataset_fire").Select("partition_key, MAX(covered_event_id) AS covered").
				Where("project_id = ? AND workflow_name = ? AND partition_key IN ?", projectID, wf, keys).
				Group("partition_key").Scan(&rows).Error; err != nil {
				return nil, fmt.Errorf("read the dataset decisions of %q: %w", wf, err)
			}
			covered[wf] = map[string]int64{}
			for _, r := range rows {
				covered[wf][r.PartitionKey] = r.Covered
			}
		}
		for _, e := range evs {
			done := true
			for _, c := range byDS[e.Dataset] {
				p, ok := dataset.RunPartition(e.PartitionKey, c.grain)
				if !ok {
					continue
				}
				if covered[c.wf][p] < e.ID {
					done = false
					break
				}
			}
			if done {
				out = append(out, e.ID)
			}
		}
		if len(evs) < retentionChunk {
			return out, nil
		}
	}
}

// supersededFire holds for a dataset_fire row f that a later decision of
// its partition follows. The newest decision of a partition stays when its
// run goes: it is what makes a later event of the partition a rerun or an
// ignored re-produce rather than a first run (evaluateFor), and what
// says the partition's events are decided.
const supersededFire = `EXISTS (SELECT 1 FROM dataset_fire g WHERE g.project_id = f.project_id AND
	g.workflow_name = f.workflow_name AND g.partition_key = f.partition_key AND g.id > f.id)`

// purgeDatasetFires deletes the superseded dataset fires of the runs ids,
// and clears the run of the newest decision of each partition (which
// stays), opt.Batch rows a transaction; it returns how many rows went.
func (s *Store) purgeDatasetFires(ctx context.Context, ids []int64, opt PurgeOptions, pace *pacer) (int64, error) {
	var total int64
	for c := range slices.Chunk(ids, opt.Batch) {
		for {
			pace.begin()
			// Read first, delete by id: MySQL refuses a DELETE whose
			// subquery reads the same table.
			var rows []int64
			if err := s.read(ctx).Raw(`SELECT f.id FROM dataset_fire f WHERE f.run_id IN ? AND `+supersededFire+` LIMIT `+strconv.Itoa(opt.Batch),
				c).Scan(&rows).Error; err != nil {
				return total, fmt.Errorf("read dataset fires to purge: %w", err)
			}
			if len(rows) == 0 {
				break
			}
			var n int64
			if err := s.tx(ctx, func(tx *gorm.DB) error {
				res := tx.Exec(`DELETE FROM dataset_fire WHERE id IN ?`, rows)
				n = res.RowsAffected
				return res.Error
			}); err != nil {
				return total, fmt.Errorf("delete dataset fires: %w", err)
			}
			total += n
			if err := pace.wait(); err != nil {
				return total, err
			}
			if len(rows) < opt.Batch {
				break
			}
		}
		if err := s.tx(ctx, func(tx *gorm.DB) error {
			return tx.Exec(`UPDATE dataset_fire SET run_id = NULL WHERE run_id IN ?`, c).Error
		}); err != nil {
			return total, fmt.Errorf("clear the purged runs of dataset decisions: %w", err)
		}
	}
	return total, nil
}
