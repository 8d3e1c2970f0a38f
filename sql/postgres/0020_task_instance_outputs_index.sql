-- The instance API lists the outputs of an instance: the few tasks that
-- exported values, found without reading the instance's other tasks.
CREATE INDEX idx_taskinst_outputs ON task_instance (workflow_instance_id) WHERE outputs_json IS NOT NULL;
