-- The instance API lists the outputs of an instance: the few tasks that
-- exported values, found on the index (NULL outputs sort first) without
-- reading the instance's other tasks. A one-byte prefix is enough to tell
-- NULL from a value; MySQL has no partial indexes.
CREATE INDEX idx_taskinst_outputs ON task_instance (workflow_instance_id, outputs_json(1));
