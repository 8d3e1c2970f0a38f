-- The waits of a running instance read only its rows that did not succeed
-- and count the latest ones that did: superseded joins the index of 0019 so
-- that count is read from the index alone (same prefix, so what used the
-- old index uses this one; still one index to write per row).
CREATE INDEX idx_taskinst_wf_state_sup ON task_instance (workflow_instance_id, state, superseded);
DROP INDEX idx_taskinst_wf_state;
