-- A page of a running instance's tasks counts, for its queued tasks, those
-- of the instance ahead of them in queue order (task priority, then id):
-- priority joins the index of 0022 so that count is read from the index
-- alone, not from each queued row (same prefix, so what used the old index
-- uses this one; still one index to write per row).
CREATE INDEX idx_taskinst_wf_state_sup_prio ON task_instance (workflow_instance_id, state, superseded, priority);
DROP INDEX idx_taskinst_wf_state_sup;
