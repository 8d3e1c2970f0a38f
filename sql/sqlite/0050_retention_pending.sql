-- Retention (docs/architecture.md, "Retention"): the runs whose instance
-- rows a purge deleted and whose task, history, event and command rows it
-- has not yet. Written in the transaction that deletes the instance rows,
-- removed once the rest is gone: a purge that was interrupted (a restart, a
-- cancelled request) leaves them here, and the next purge of the project
-- finishes them first.
CREATE TABLE retention_pending (
  instance_id BIGINT NOT NULL PRIMARY KEY,
  project_id  BIGINT NOT NULL,
  created_at  DATETIME NOT NULL
);
CREATE INDEX idx_retention_pending_project ON retention_pending (project_id);
-- A purge deletes the ledger rows of the runs it deletes: fires
-- (schedule_fire, 0044) and trigger deliveries (0045), found by their run.
CREATE INDEX idx_schedule_fire_run ON schedule_fire (workflow_instance_id);
CREATE INDEX idx_trigger_delivery_run ON trigger_delivery (run_id);
-- How often the leader master purges every project under its policy
-- (hours; 0: only when asked over the API or the CLI).
INSERT INTO setting (name, value, updated_at) VALUES ('retention.purge_every_hours', '24', CURRENT_TIMESTAMP);
