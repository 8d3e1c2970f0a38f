-- Overlap policy of schedules and max_active_runs of workflows. A queued run
-- is a submitted instance without a start command, waiting for its schedule
-- (overlap wait or replace) or its workflow (max_active_runs) to have room;
-- the active master releases it in order of id.
ALTER TABLE schedule ADD COLUMN overlap VARCHAR(16) NOT NULL DEFAULT 'allow';
ALTER TABLE schedule ADD COLUMN skipped_fires BIGINT NOT NULL DEFAULT 0;
ALTER TABLE schedule ADD COLUMN last_skipped_time DATETIME(6) NULL;
ALTER TABLE workflow_definition ADD COLUMN max_active_runs INT NOT NULL DEFAULT 0;
ALTER TABLE workflow_instance ADD COLUMN queued TINYINT NOT NULL DEFAULT 0;
CREATE INDEX idx_wfinst_queued ON workflow_instance (queued, state);
