package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/beluga-scheduler/beluga/common/dataset"
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

func (h *handlers) postDatasetEvent(w http.ResponseWriter, r *http.Request) error {
	project, name, err := datasetPath(r)
	if err != nil {
		return err
	}
	var req DatasetEventRequest
	if err := decodeJSON(r, &req, false); err != nil {
		return err
	}
	if strings.TrimSpace(req.Partition) == "" {
		return badRequest("partition is required: a day (2026-12-07) or an hour (2026-12-07T13)")
	}
	if _, _, err := dataset.NormalizePartition(req.Partition); err != nil {
		return badRequest("%v", err)
	}
	// An event starts its consumers' runs: a non-admin is held to the code
	// gate of unsandboxed servers as for starting them by hand.
	if h.codeGateShut(r.Context()) {
		d, err := h.Store.DatasetGet(r.Context(), project, name, 1)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return storeError(err)
		}
		for _, c := range d.Consumers {
			if err := h.codeGateStored(r, project, c.Workflow, 0); err != nil {
				return err
			}
		}
	}
	key := r.Header.Get(HeaderIdempotencyKey)
	if len(key) > 250 {
		return badRequest("header %s is longer than 250 bytes", HeaderIdempotencyKey)
	}
	ev, dup, err := h.Store.DatasetEmit(r.Context(), store.DatasetEmit{Project: project, Dataset: name, Partition: req.Partition,
		Key: key, By: callerOf(r.Context()).name})
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
