package store

import (
	"context"
	"fmt"
	"strings"

	"gorm.io/gorm"

	"github.com/beluga-scheduler/beluga/common/dataset"
	"github.com/beluga-scheduler/beluga/common/model"
	"github.com/beluga-scheduler/beluga/common/plan"
)

// A dataset event's plan (README, "Impact plans"): its facts are each
// consumer's decision, decided as the leader's evaluator would and rolled
// back, each consumer's latest version, and whether its Idempotency-Key was
// posted; its apply posts the event, which the leader then evaluates.

// DatasetEmitPlan plans posting e: the decisions, and the task names of
// each consumer that would run (its latest version's, in order).
func (s *Store) DatasetEmitPlan(ctx context.Context, e DatasetEmit) (plan.Emit, map[string][]string, error) {
	db := s.db.WithContext(ctx)
	ds, err := s.emitPreview(db, e)
	if err != nil {
		return plan.Emit{}, nil, err
	}
	key, _, _ := dataset.NormalizePartition(e.Partition)
	out := plan.Emit{Project: e.Project, Dataset: e.Dataset, Partition: key, Key: e.Key, Decisions: []plan.Decision{}}
	tasks := map[string][]string{}
	for _, d := range ds {
		out.Decisions = append(out.Decisions, plan.Decision{Workflow: d.Workflow, Partition: d.Partition, Outcome: d.Outcome, Rerun: d.Rerun, Reason: d.Reason})
		if d.Outcome != model.DatasetFired {
			continue
		}
		names, err := latestTaskNames(db, e.Project, d.Workflow)
		if err != nil {
			return plan.Emit{}, nil, err
		}
		tasks[d.Workflow] = names
	}
	return out, tasks, nil
}

// emitFacts adds the facts of a dataset event's plan p to f.
func (s *Store) emitFacts(tx *gorm.DB, p plan.Plan, f plan.Facts) error {
	e := p.Emit
	if e == nil {
		return nil
	}
	ds, err := s.emitPreview(tx, DatasetEmit{Project: e.Project, Dataset: e.Dataset, Partition: e.Partition, Key: e.Key})
	if err != nil {
		return err
	}
	pr, err := getProject(tx, e.Project)
	if err != nil {
		return err
	}
	for _, d := range ds {
		f[fmt.Sprintf("%s/%s on %s@%s", e.Project, d.Workflow, e.Dataset, e.Partition)] = decisionFact(d.Outcome, d.Partition, d.Rerun)
		v, err := latestVersion(tx, pr.ID, d.Workflow)
		if err != nil {
			return err
		}
		f[fmt.Sprintf("%s/%s latest version", e.Project, d.Workflow)] = fmt.Sprint(v)
	}
	if e.Key != "" {
		var n int64
		if err := tx.Model(&datasetEventRow{}).Where("project_id = ? AND dataset = ? AND partition_key = ? AND producer = ?",
			pr.ID, e.Dataset, e.Partition, "ext:"+e.Key).Count(&n).Error; err != nil {
			return fmt.Errorf("look up event key %q: %w", e.Key, err)
		}
		f[fmt.Sprintf("event %s@%s with key %q", e.Dataset, e.Partition, e.Key)] = map[bool]string{true: "posted", false: "not posted"}[n > 0]
	}
	return nil
}

// decisionFact is one decision as a fact: what runs, not why.
func decisionFact(outcome, partition string, rerun bool) string {
	switch {
	case outcome == model.DatasetFired && rerun:
		return "reruns " + partition
	case outcome == model.DatasetFired:
		return "runs " + partition
	case outcome == model.DatasetIgnored:
		return "ignored"
	}
	return "no run"
}

// emitMatches says whether facts read now give plan p's decisions, no
// more and no fewer (PlanCreate: the world moved between the plan's read
// and its storing).
func emitMatches(p plan.Plan, f plan.Facts) bool {
	e := p.Emit
	suffix := " on " + e.Dataset + "@" + e.Partition
	n := 0
	for k := range f {
		if strings.HasSuffix(k, suffix) {
			n++
		}
	}
	for _, d := range e.Decisions {
		if f[fmt.Sprintf("%s/%s on %s@%s", e.Project, d.Workflow, e.Dataset, e.Partition)] != decisionFact(d.Outcome, d.Partition, d.Rerun) {
			return false
		}
	}
	return n == len(e.Decisions)
}

// latestTaskNames are the tasks of workflow's latest version, in the
// order they were written.
func latestTaskNames(db *gorm.DB, project, workflow string) ([]string, error) {
	pr, err := getProject(db, project)
	if err != nil {
		return nil, err
	}
	var def workflowDefinitionRow
	if err := db.Select("id").Where("project_id = ? AND name = ?", pr.ID, workflow).Order("version DESC").Take(&def).Error; err != nil {
		return nil, notFound(err, fmt.Sprintf("workflow %q in project %q", workflow, project))
	}
	names := []string{}
	if err := db.Model(&taskDefinitionRow{}).Where("workflow_definition_id = ?", def.ID).Order("id").Pluck("name", &names).Error; err != nil {
		return nil, fmt.Errorf("read the tasks of %q: %w", workflow, err)
	}
	return names, nil
}

// postEmit writes plan p's event in tx, as POST .../events does; a key
// posted since is a conflict (the facts say so first).
func postEmit(tx *gorm.DB, e plan.Emit, by string) (int64, error) {
	pr, err := getProject(tx, e.Project)
	if err != nil {
		return 0, err
	}
	producer := "ext:" + e.Key
	if e.Key == "" {
		producer = "ext:plan:" + fmt.Sprint(now6().UnixNano())
	}
	r := datasetEventRow{ProjectID: pr.ID, Dataset: e.Dataset, PartitionKey: e.Partition, Producer: producer, ProducedBy: by, ProducedAt: now6()}
	if err := tx.Create(&r).Error; err != nil {
		if isUniqueViolation(err) {
			return 0, fmt.Errorf("event %s@%s with key %q was posted meanwhile: %w", e.Dataset, e.Partition, e.Key, ErrConflict)
		}
		return 0, fmt.Errorf("record %s@%s: %w", e.Dataset, e.Partition, err)
	}
	return r.ID, nil
}
