-- The instance API counts an instance's tasks per state and pages them:
-- one range of this index, not a scan of every task of the instance.
CREATE INDEX idx_taskinst_wf_state ON task_instance (workflow_instance_id, state);
