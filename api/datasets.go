package api

import (
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/beluga-scheduler/beluga/common/dataset"
	"github.com/beluga-scheduler/beluga/common/plan"
	"github.com/beluga-scheduler/beluga/common/store"
)

// Data-aware scheduling (README, "Data-aware scheduling"): a project's
// datasets with their producers, consumers and partitions; events posted
// from outside (operate: they start runs as a run request would); a
// consumer's ledger; and a run's lineage.

func datasetPath(r *http.Request) (project, name string, err error) {
	if project, err = pathName(r, "project"); err != nil {
		return "", "", err
	}
	name = r.PathValue("dataset")
	if !dataset.ValidName(name) {
		return "", "", badRequest("path parameter dataset: %q: %s", name, dataset.NameRule)
	}
	return project, name, nil
}

func (h *handlers) listDatasets(w http.ResponseWriter, r *http.Request) error {
	project, err := pathName(r, "project")
	if err != nil {
		return err
	}
	ds, err := h.Store.DatasetList(r.Context(), project)
	if err != nil {
		return storeError(err)
	}
	writeJSON(w, http.StatusOK, DatasetList{Datasets: ds})
	return nil
}

func (h *handlers) getDataset(w http.ResponseWriter, r *http.Request) error {
	project, name, err := datasetPath(r)
	if err != nil {
		return err
	}
	limit, err := queryInt(r, "limit", 50, 1, 1000)
	if err != nil {
		return err
	}
	d, err := h.Store.DatasetGet(r.Context(), project, name, int(limit))
	if err != nil {
		return storeError(err)
	}
	writeJSON(w, http.StatusOK, d)
	return nil
}

// datasetEvent reads and checks a dataset event's request (the events
// route's and its plan's): the event to post, or an error to answer.
func (h *handlers) datasetEvent(r *http.Request) (store.DatasetEmit, error) {
	project, name, err := datasetPath(r)
	if err != nil {
		return store.DatasetEmit{}, err
	}
	var req DatasetEventRequest
	if err := decodeJSON(r, &req, false); err != nil {
		return store.DatasetEmit{}, err
	}
	if strings.TrimSpace(req.Partition) == "" {
		return store.DatasetEmit{}, badRequest("partition is required: a day (2026-12-07) or an hour (2026-12-07T13)")
	}
	if _, _, err := dataset.NormalizePartition(req.Partition); err != nil {
		return store.DatasetEmit{}, badRequest("%v", err)
	}
	// An event starts its consumers' runs: a non-admin is held to the code
	// gate of unsandboxed servers as for starting them by hand.
	if h.codeGateShut(r.Context()) {
		d, err := h.Store.DatasetGet(r.Context(), project, name, 1)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return store.DatasetEmit{}, storeError(err)
		}
		for _, c := range d.Consumers {
			if err := h.codeGateStored(r, project, c.Workflow, 0); err != nil {
				return store.DatasetEmit{}, err
			}
		}
	}
	key := r.Header.Get(HeaderIdempotencyKey)
	if len(key) > 250 {
		return store.DatasetEmit{}, badRequest("header %s is longer than 250 bytes", HeaderIdempotencyKey)
	}
	return store.DatasetEmit{Project: project, Dataset: name, Partition: req.Partition, Key: key, By: callerOf(r.Context()).name}, nil
}

func (h *handlers) postDatasetEvent(w http.ResponseWriter, r *http.Request) error {
	e, err := h.datasetEvent(r)
	if err != nil {
		return err
	}
	ev, dup, err := h.Store.DatasetEmit(r.Context(), e)
	if err != nil {
		return storeError(err)
	}
	status := http.StatusCreated
	if dup {
		status = http.StatusOK
	}
	writeJSON(w, status, DatasetEventResult{Event: ev, Duplicate: dup})
	return nil
}

func (h *handlers) listDatasetFires(w http.ResponseWriter, r *http.Request) error {
	project, workflow, err := projectAndName(r)
	if err != nil {
		return err
	}
	limit, err := queryInt(r, "limit", 100, 1, 1000)
	if err != nil {
		return err
	}
	fs, err := h.Store.DatasetFires(r.Context(), project, workflow, int(limit))
	if err != nil {
		return storeError(err)
	}
	writeJSON(w, http.StatusOK, DatasetFireList{Fires: fs})
	return nil
}

func (h *handlers) instanceDatasets(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r, "id")
	if err != nil {
		return err
	}
	d, err := h.Store.RunDatasets(r.Context(), id)
	if err != nil {
		return storeError(err)
	}
	writeJSON(w, http.StatusOK, d)
	return nil
}

// planDatasetEvent is the plan of a dataset event: which consumers the
// event would start (or rerun) a run of, and why the others would not; its
// apply posts the event, or is refused (409) when a decision changed.
func (h *handlers) planDatasetEvent(w http.ResponseWriter, r *http.Request) error {
	e, err := h.datasetEvent(r)
	if err != nil {
		return err
	}
	by, err := requestedBy(r, "")
	if err != nil {
		return err
	}
	em, tasks, err := h.Store.DatasetEmitPlan(r.Context(), e)
	if err != nil {
		return storeError(err)
	}
	p := plan.MakeEmit(em, tasks)
	if err := h.estimateEmit(r, &p); err != nil {
		return err
	}
	return h.keepPlan(w, r, e.Project, p, by)
}

// estimateEmit gives each run a dataset event's plan starts the tasks,
// waits and estimates of a run of its workflow's latest version started
// now (as a rerun from tasks plans one), and the plan the longest of them:
// the runs start together.
func (h *handlers) estimateEmit(r *http.Request, p *plan.Plan) error {
	now := time.Now().UTC()
	for i, in := range p.Instances {
		snap, def, _, err := h.Store.PlanSnapshotStart(r.Context(), store.PlanTarget{Project: in.Project, Workflow: in.Workflow}, plan.None)
		if err != nil {
			return storeError(err)
		}
		sp, err := plan.MakeStart(plan.StartRequest{Action: plan.ActionRerunFrom, WF: plan.WF{Project: in.Project, Workflow: in.Workflow},
			Def: def, Runs: []plan.NewRun{{Base: now, Loc: time.UTC}}, Downstream: plan.None}, snap)
		if err != nil {
			return badRequest("%s", err.Error())
		}
		if len(sp.Instances) == 0 {
			continue
		}
		run := sp.Instances[0]
		in.Tasks, in.Estimate, in.Waits = run.Tasks, run.Estimate, append(in.Waits, run.Waits...)
		p.Instances[i] = in
		p.Estimate.P50, p.Estimate.P90 = max(p.Estimate.P50, run.Estimate.P50), max(p.Estimate.P90, run.Estimate.P90)
	}
	return nil
}
