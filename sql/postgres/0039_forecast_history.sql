-- A finish-time forecast reads the last runs of a workflow, newest first
-- (store.TaskHistory): by its names and id, a walk of the index backwards
-- however many runs the workflow has had.
CREATE INDEX idx_wfinst_wf_id ON workflow_instance (project_name, workflow_name, id);
