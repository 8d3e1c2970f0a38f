-- Cron schedules (same as sql/mysql/0005_schedule.sql).
CREATE TABLE schedule (
  id             BIGSERIAL PRIMARY KEY,
  project_id     BIGINT NOT NULL,
  project_name   VARCHAR(128) NOT NULL,
  workflow_name  VARCHAR(128) NOT NULL,
  cron           VARCHAR(255) NOT NULL,
  timezone       VARCHAR(64) NOT NULL DEFAULT '',
  start_time     TIMESTAMP NULL,
  end_time       TIMESTAMP NULL,
  catchup        VARCHAR(16) NOT NULL DEFAULT 'latest',
  priority       SMALLINT NULL,
  worker_group   VARCHAR(128) NOT NULL DEFAULT '',
  params_json    TEXT,
  enabled        BOOLEAN NOT NULL DEFAULT TRUE,
  next_fire_time TIMESTAMP NULL,
  last_fire_time TIMESTAMP NULL,
  note           VARCHAR(1024) NOT NULL DEFAULT '',
  revision       BIGINT NOT NULL DEFAULT 0,
  version        BIGINT NOT NULL DEFAULT 0,
  updated_by     VARCHAR(128) NOT NULL DEFAULT '',
  created_at     TIMESTAMP NOT NULL,
  updated_at     TIMESTAMP NOT NULL
);
CREATE UNIQUE INDEX uk_schedule_wf ON schedule (project_id, workflow_name);
CREATE INDEX idx_schedule_next ON schedule (enabled, next_fire_time);

ALTER TABLE workflow_instance ADD COLUMN schedule_id BIGINT NULL;
CREATE UNIQUE INDEX uk_wfinst_schedule ON workflow_instance (schedule_id, schedule_time);
ALTER TABLE workflow_instance ADD COLUMN timezone VARCHAR(64) NOT NULL DEFAULT '';
