-- Runs that start from chosen tasks, and dry runs (same as sql/mysql/0004_run_scope.sql).
ALTER TABLE workflow_instance ADD COLUMN start_nodes TEXT NULL;
ALTER TABLE workflow_instance ADD COLUMN scope VARCHAR(16) NOT NULL DEFAULT '';
ALTER TABLE workflow_instance ADD COLUMN dry_run BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE task_instance ADD COLUMN dry_run BOOLEAN NOT NULL DEFAULT FALSE;
