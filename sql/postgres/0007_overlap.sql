-- Overlap policy and max_active_runs (same as sql/mysql/0007_overlap.sql).
ALTER TABLE schedule ADD COLUMN overlap VARCHAR(16) NOT NULL DEFAULT 'allow';
ALTER TABLE schedule ADD COLUMN skipped_fires BIGINT NOT NULL DEFAULT 0;
ALTER TABLE schedule ADD COLUMN last_skipped_time TIMESTAMP NULL;
ALTER TABLE workflow_definition ADD COLUMN max_active_runs INT NOT NULL DEFAULT 0;
ALTER TABLE workflow_instance ADD COLUMN queued BOOLEAN NOT NULL DEFAULT FALSE;
CREATE INDEX idx_wfinst_queued ON workflow_instance (queued, state);
