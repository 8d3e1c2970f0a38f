-- Cron schedules (same as sql/mysql/0005_schedule.sql).
CREATE TABLE schedule (
  id             INTEGER PRIMARY KEY AUTOINCREMENT,
  project_id     BIGINT NOT NULL,
  project_name   VARCHAR(128) NOT NULL,
  workflow_name  VARCHAR(128) NOT NULL,
  cron           VARCHAR(255) NOT NULL,
  timezone       VARCHAR(64) NOT NULL DEFAULT '',
  start_time     DATETIME NULL,
  end_time       DATETIME NULL,
  catchup        VARCHAR(16) NOT NULL DEFAULT 'latest',
  priority       TINYINT NULL,
  worker_group   VARCHAR(128) NOT NULL DEFAULT '',
  params_json    TEXT,
  enabled        TINYINT NOT NULL DEFAULT 1,
  next_fire_time DATETIME NULL,
  last_fire_time DATETIME NULL,
  note           VARCHAR(1024) NOT NULL DEFAULT '',
  revision       BIGINT NOT NULL DEFAULT 0,
  version        BIGINT NOT NULL DEFAULT 0,
  updated_by     VARCHAR(128) NOT NULL DEFAULT '',
  created_at     DATETIME NOT NULL,
  updated_at     DATETIME NOT NULL
);
CREATE UNIQUE INDEX uk_schedule_wf ON schedule (project_id, workflow_name);
CREATE INDEX idx_schedule_next ON schedule (enabled, next_fire_time);

ALTER TABLE workflow_instance ADD COLUMN schedule_id BIGINT NULL;
CREATE UNIQUE INDEX uk_wfinst_schedule ON workflow_instance (schedule_id, schedule_time);
ALTER TABLE workflow_instance ADD COLUMN timezone VARCHAR(64) NOT NULL DEFAULT '';
