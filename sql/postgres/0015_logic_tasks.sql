-- Logic tasks run by the master (sub_workflow, dependent). A child run
-- names the parent task attempt that started it; the unique index makes
-- "one child per parent attempt" a property of the database, whatever a
-- master failover does between the steps. The parent attempt points back
-- at its child (child_instance_id), and a waiting task says what it waits
-- for (message).
ALTER TABLE workflow_instance ADD COLUMN parent_instance_id BIGINT;
ALTER TABLE workflow_instance ADD COLUMN parent_task_instance_id BIGINT;
CREATE UNIQUE INDEX uk_wfinst_parent_task ON workflow_instance (parent_task_instance_id);
ALTER TABLE task_instance ADD COLUMN child_instance_id BIGINT;
ALTER TABLE task_instance ADD COLUMN message VARCHAR(1024) NOT NULL DEFAULT '';
CREATE INDEX idx_wfinst_project_wf_sched ON workflow_instance (project_id, workflow_name, schedule_time);
