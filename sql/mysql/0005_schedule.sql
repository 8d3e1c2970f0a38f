-- Cron schedules, one per workflow. next_fire_time is the next schedule time
-- not yet fired: the active master advances it in the same transaction that
-- writes the runs, so a time fires once across failovers.
CREATE TABLE schedule (
  id             BIGINT AUTO_INCREMENT PRIMARY KEY,
  project_id     BIGINT NOT NULL,
  project_name   VARCHAR(128) NOT NULL,
  workflow_name  VARCHAR(128) NOT NULL,
  cron           VARCHAR(255) NOT NULL,
  timezone       VARCHAR(64) NOT NULL DEFAULT '',
  start_time     DATETIME(6) NULL,
  end_time       DATETIME(6) NULL,
  catchup        VARCHAR(16) NOT NULL DEFAULT 'latest',
  priority       TINYINT NULL,
  worker_group   VARCHAR(128) NOT NULL DEFAULT '',
  params_json    TEXT,
  enabled        TINYINT NOT NULL DEFAULT 1,
  next_fire_time DATETIME(6) NULL,
  last_fire_time DATETIME(6) NULL,
  note           VARCHAR(1024) NOT NULL DEFAULT '',
  revision       BIGINT NOT NULL DEFAULT 0,
  version        BIGINT NOT NULL DEFAULT 0,
  updated_by     VARCHAR(128) NOT NULL DEFAULT '',
  created_at     DATETIME(6) NOT NULL,
  updated_at     DATETIME(6) NOT NULL,
  UNIQUE KEY uk_schedule_wf (project_id, workflow_name),
  KEY idx_schedule_next (enabled, next_fire_time)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- A schedule time runs once per schedule; manual runs and backfills carry no schedule.
ALTER TABLE workflow_instance ADD COLUMN schedule_id BIGINT NULL;
CREATE UNIQUE INDEX uk_wfinst_schedule ON workflow_instance (schedule_id, schedule_time);
ALTER TABLE workflow_instance ADD COLUMN timezone VARCHAR(64) NOT NULL DEFAULT '';
