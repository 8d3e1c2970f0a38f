package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"gorm.io/gorm"

	"github.com/beluga-scheduler/beluga/common/secret"
	"github.com/beluga-scheduler/beluga/common/spec"
)

// Secret params are stored sealed (common/secret) wherever params are
// stored: a definition's spec, a run's, a schedule's and a backfill's
// params. A sealed value marks itself, so reads hand sealed values on as
// they are: the API masks them, the master opens them for the dispatch.

// ErrMaskedSecret is returned for a spec whose secret param is the mask
// (secret.Mask) where the latest version has no sealed value to keep.
var ErrMaskedSecret = errors.New("secret param is " + secret.Mask + " but no earlier value is stored to keep: give its value")

// WithSecrets is a view of s that seals secret params with box. A store
// without one refuses to store a secret param (secret.ErrNoKey).
func (s *Store) WithSecrets(box *secret.Box) *Store {
	c := *s
	c.box = box
	return &c
}

// sealSpec returns the stored form of a spec that has secret params: the
// canonical JSON with their values sealed, and the hash of the canonical
// form with each secret value replaced by its keyed digest, so that
// applying the same spec again is no new version while the hash, which
// answers show, says nothing about the value.
func (s *Store) sealSpec(w *spec.Workflow) (canon []byte, hash string, err error) {
	wide := w.SecretParams
	form := func(f func(map[string]string, []string) (map[string]string, error)) (*spec.Workflow, error) {
		c := *w
		if c.Params, err = f(w.Params, wide); err != nil {
			return nil, fmt.Errorf("workflow: %w", err)
		}
		c.Tasks = slices.Clone(w.Tasks)
		for i := range c.Tasks {
			t := &c.Tasks[i]
			if t.Params, err = f(t.Params, append(slices.Clone(wide), t.SecretParams...)); err != nil {
				return nil, fmt.Errorf("task %q: %w", t.Name, err)
			}
		}
		return &c, nil
	}
	digested, err := form(s.box.DigestNamed)
	if err != nil {
		return nil, "", err
	}
	if _, hash, err = digested.Canonical(); err != nil {
		return nil, "", err
	}
	sealed, err := form(s.box.SealNamed)
	if err != nil {
		return nil, "", err
	}
	canon, _, err = sealed.Canonical()
	return canon, hash, err
}

// keepSealed returns w with each secret param given as secret.Mask (as
// answers show it) replaced by the sealed value of the same param, at the
// same level, in prev: the stored spec of the latest version ("" when there
// is none). w itself is not changed. A mask with no sealed value to keep is
// ErrMaskedSecret naming each such param.
func keepSealed(w *spec.Workflow, prev string) (*spec.Workflow, error) {
	var old struct {
		Params map[string]string `json:"params"`
		Tasks  []struct {
			Name   string            `json:"name"`
			Params map[string]string `json:"params"`
		} `json:"tasks"`
	}
	if prev != "" {
		if err := json.Unmarshal([]byte(prev), &old); err != nil {
			return nil, fmt.Errorf("read the latest version's spec: %w", err)
		}
	}
	var missing []string
	keep := func(label string, ps, olds map[string]string, names []string) map[string]string {
		var out map[string]string
		for _, k := range slices.Sorted(maps.Keys(ps)) {
			if ps[k] != secret.Mask || !slices.Contains(names, k) {
				continue
			}
			if !secret.IsSealed(olds[k]) {
				missing = append(missing, label+" param "+k)
				continue
			}
			if out == nil {
				out = maps.Clone(ps)
			}
			out[k] = olds[k]
		}
		if out == nil {
			return ps
		}
		return out
	}
	c := *w
	c.Params = keep("workflow", w.Params, old.Params, w.SecretParams)
	c.Tasks = slices.Clone(w.Tasks)
	for i := range c.Tasks {
		t := &c.Tasks[i]
		var olds map[string]string
		for _, ot := range old.Tasks {
			if ot.Name == t.Name {
				olds = ot.Params
			}
		}
		t.Params = keep(fmt.Sprintf("task %q", t.Name), t.Params, olds, append(slices.Clone(w.SecretParams), t.SecretParams...))
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s: %w", strings.Join(missing, ", "), ErrMaskedSecret)
	}
	return &c, nil
}

// specSecrets reads the names the stored spec of definition id marks
// secret, at any level.
func specSecrets(tx *gorm.DB, id int64) ([]string, error) {
	var raw string
	var col []string
	if err := tx.Model(&workflowDefinitionRow{}).Where("id = ?", id).Pluck("spec_json", &col).Error; err != nil {
		return nil, fmt.Errorf("read spec of definition %d: %w", id, err)
	}
	if len(col) > 0 {
		raw = col[0]
	}
	var names struct {
		SecretParams []string `json:"secret_params"`
		Tasks        []struct {
			SecretParams []string `json:"secret_params"`
		} `json:"tasks"`
	}
	if raw == "" || json.Unmarshal([]byte(raw), &names) != nil {
		return nil, nil // not a spec with secrets: nothing named
	}
	out := names.SecretParams
	for _, t := range names.Tasks {
		for _, n := range t.SecretParams {
			if !slices.Contains(out, n) {
				out = append(out, n)
			}
		}
	}
	return out, nil
}

// latestSecrets is specSecrets of the latest version of a workflow.
func latestSecrets(tx *gorm.DB, projectID int64, workflow string) ([]string, error) {
	var ids []int64
	if err := tx.Model(&workflowDefinitionRow{}).Where("project_id = ? AND name = ?", projectID, workflow).
		Order("version DESC").Limit(1).Pluck("id", &ids).Error; err != nil {
		return nil, fmt.Errorf("find workflow %q: %w", workflow, err)
	}
	if len(ids) == 0 {
		return nil, nil
	}
	return specSecrets(tx, ids[0])
}

// sealParams seals the params named in asked, or marked secret by the
// workflow's spec (names), keeping the sealed value of old where the new
// one is the mask an answer showed (a schedule read, edited and written
// back keeps its secret).
func sealParams(box *secret.Box, ps map[string]string, asked, names []string, old map[string]string) (map[string]string, error) {
	if len(ps) == 0 {
		return ps, nil
	}
	all := append(slices.Clone(asked), names...)
	var kept map[string]string
	var missing []string
	for k, v := range ps {
		if v != secret.Mask {
			continue
		}
		if !secret.IsSealed(old[k]) {
			if slices.Contains(all, k) {
				missing = append(missing, "param "+k)
			}
			continue
		}
		if kept == nil {
			kept = make(map[string]string, len(ps))
		}
		kept[k] = old[k]
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return nil, fmt.Errorf("%s: %w", strings.Join(missing, ", "), ErrMaskedSecret)
	}
	if kept != nil {
		for k, v := range ps {
			if _, ok := kept[k]; !ok {
				kept[k] = v
			}
		}
		ps = kept
	}
	return box.SealNamed(ps, all)
}

// runParams is req's params as a run of def stores them.
func runParams(tx *gorm.DB, box *secret.Box, def workflowDefinitionRow, req RunRequest) (map[string]string, error) {
	if len(req.Params) == 0 {
		return nil, nil
	}
	names, err := specSecrets(tx, def.ID)
	if err != nil {
		return nil, err
	}
	return sealParams(box, req.Params, req.SecretParams, names, nil)
}
