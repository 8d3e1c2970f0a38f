-- Backfills: runs of a workflow for a range of past schedule times. The
-- times are fixed when the backfill is asked for; the active master submits
-- them in order, at most parallelism unfinished at a time, moving the cursor
-- in the same transaction that writes the runs.
CREATE TABLE backfill (
  id            BIGINT AUTO_INCREMENT PRIMARY KEY,
  project_id    BIGINT NOT NULL,
  project_name  VARCHAR(128) NOT NULL,
  workflow_name VARCHAR(128) NOT NULL,
  cron          VARCHAR(255) NOT NULL,
  timezone      VARCHAR(64) NOT NULL DEFAULT '',
  start_time    DATETIME(6) NOT NULL,
  end_time      DATETIME(6) NOT NULL,
  times_json    MEDIUMTEXT NOT NULL,
  total         INT NOT NULL,
  submitted     INT NOT NULL DEFAULT 0,
  parallelism   INT NOT NULL DEFAULT 1,
  on_failure    VARCHAR(16) NOT NULL DEFAULT 'continue',
  priority      TINYINT NULL,
  worker_group  VARCHAR(128) NOT NULL DEFAULT '',
  params_json   TEXT,
  dry_run       TINYINT NOT NULL DEFAULT 0,
  state         VARCHAR(16) NOT NULL,
  reason        VARCHAR(1024) NOT NULL DEFAULT '',
  revision      BIGINT NOT NULL DEFAULT 0,
  requested_by  VARCHAR(128) NOT NULL DEFAULT '',
  created_at    DATETIME(6) NOT NULL,
  end_at        DATETIME(6) NULL,
  KEY idx_backfill_state (state),
  KEY idx_backfill_wf (project_name, workflow_name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

ALTER TABLE workflow_instance ADD COLUMN backfill_id BIGINT NULL;
CREATE UNIQUE INDEX uk_wfinst_backfill ON workflow_instance (backfill_id, schedule_time);
