-- Retention (docs/architecture.md, "Retention"): a project's own policy,
-- overriding the global default in the setting table for each field that
-- is not NULL (NULL: the default applies). keep_days and keep_runs of 0
-- keep forever on that axis.
CREATE TABLE project_retention (
  project_id BIGINT NOT NULL PRIMARY KEY,
  keep_days  INT NULL,
  keep_runs  INT NULL,
  updated_by VARCHAR(255) NOT NULL DEFAULT '',
  updated_at DATETIME(6) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
-- The global default (0: keep forever); audit rows are kept for audit_days.
INSERT INTO setting (name, value, updated_at) VALUES ('retention.keep_days', '0', CURRENT_TIMESTAMP);
INSERT INTO setting (name, value, updated_at) VALUES ('retention.keep_runs', '0', CURRENT_TIMESTAMP);
INSERT INTO setting (name, value, updated_at) VALUES ('retention.audit_days', '0', CURRENT_TIMESTAMP);
-- A purge deletes a run's events by its id.
CREATE INDEX idx_event_instance ON event (instance_id);
