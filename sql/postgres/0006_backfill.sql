-- Backfills (same as sql/mysql/0006_backfill.sql): runs of a workflow for a range of past schedule times. The
-- times are fixed when the backfill is asked for; the active master submits
-- them in order, at most parallelism unfinished at a time, moving the cursor
-- in the same transaction that writes the runs.
CREATE TABLE backfill (
  id            BIGSERIAL PRIMARY KEY,
  project_id    BIGINT NOT NULL,
  project_name  VARCHAR(128) NOT NULL,
  workflow_name VARCHAR(128) NOT NULL,
  cron          VARCHAR(255) NOT NULL,
  timezone      VARCHAR(64) NOT NULL DEFAULT '',
  start_time    TIMESTAMP NOT NULL,
  end_time      TIMESTAMP NOT NULL,
  times_json    TEXT NOT NULL,
  total         INT NOT NULL,
  submitted     INT NOT NULL DEFAULT 0,
  parallelism   INT NOT NULL DEFAULT 1,
  on_failure    VARCHAR(16) NOT NULL DEFAULT 'continue',
  priority      SMALLINT NULL,
  worker_group  VARCHAR(128) NOT NULL DEFAULT '',
  params_json   TEXT,
  dry_run       BOOLEAN NOT NULL DEFAULT FALSE,
  state         VARCHAR(16) NOT NULL,
  reason        VARCHAR(1024) NOT NULL DEFAULT '',
  revision      BIGINT NOT NULL DEFAULT 0,
  requested_by  VARCHAR(128) NOT NULL DEFAULT '',
  created_at    TIMESTAMP NOT NULL,
  end_at        TIMESTAMP NULL
);
CREATE INDEX idx_backfill_state ON backfill (state);
CREATE INDEX idx_backfill_wf ON backfill (project_name, workflow_name);

ALTER TABLE workflow_instance ADD COLUMN backfill_id BIGINT NULL;
CREATE UNIQUE INDEX uk_wfinst_backfill ON workflow_instance (backfill_id, schedule_time);
