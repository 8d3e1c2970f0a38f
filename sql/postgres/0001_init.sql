-- Beluga schema v1 for PostgreSQL (same tables as sql/mysql and sql/sqlite). Times are UTC with microseconds.
CREATE TABLE project (
  id          BIGSERIAL PRIMARY KEY,
  name        VARCHAR(128) NOT NULL,
  description VARCHAR(1024) NOT NULL DEFAULT '',
  created_at  TIMESTAMP NOT NULL
);

CREATE TABLE workflow_definition (
  id               BIGSERIAL PRIMARY KEY,
  project_id       BIGINT NOT NULL,
  name             VARCHAR(128) NOT NULL,
  version          INT NOT NULL,
  spec_json        TEXT NOT NULL,
  spec_hash        CHAR(64) NOT NULL,
  description      VARCHAR(1024) NOT NULL DEFAULT '',
  failure_strategy VARCHAR(16) NOT NULL,
  priority         SMALLINT NOT NULL,
  worker_group     VARCHAR(128) NOT NULL,
  timeout_ms       BIGINT NOT NULL DEFAULT 0,
  task_count       INT NOT NULL,
  created_at       TIMESTAMP NOT NULL
);

CREATE TABLE task_definition (
  id                     BIGSERIAL PRIMARY KEY,
  workflow_definition_id BIGINT NOT NULL,
  name                   VARCHAR(128) NOT NULL,
  type                   VARCHAR(32) NOT NULL,
  command                TEXT NOT NULL,
  priority               SMALLINT NOT NULL,
  worker_group           VARCHAR(128) NOT NULL,
  retries                INT NOT NULL DEFAULT 0,
  retry_interval_ms      BIGINT NOT NULL DEFAULT 0,
  timeout_ms             BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE task_relation (
  id                     BIGSERIAL PRIMARY KEY,
  workflow_definition_id BIGINT NOT NULL,
  pre_task               VARCHAR(128) NOT NULL,
  post_task              VARCHAR(128) NOT NULL
);

CREATE TABLE worker_group (
  id         BIGSERIAL PRIMARY KEY,
  name       VARCHAR(128) NOT NULL,
  created_at TIMESTAMP NOT NULL
);

CREATE TABLE command (
  id                   BIGSERIAL PRIMARY KEY,
  type                 VARCHAR(32) NOT NULL,
  workflow_instance_id BIGINT NOT NULL,
  created_at           TIMESTAMP NOT NULL
);

CREATE TABLE workflow_instance (
  id                     BIGSERIAL PRIMARY KEY,
  project_id             BIGINT NOT NULL,
  project_name           VARCHAR(128) NOT NULL,
  workflow_name          VARCHAR(128) NOT NULL,
  workflow_definition_id BIGINT NOT NULL,
  version                INT NOT NULL,
  state                  VARCHAR(32) NOT NULL,
  command_type           VARCHAR(32) NOT NULL,
  host                   VARCHAR(255) NOT NULL DEFAULT '',
  epoch                  BIGINT NOT NULL DEFAULT 0,
  priority               SMALLINT NOT NULL,
  worker_group           VARCHAR(128) NOT NULL DEFAULT '',
  params_json            TEXT,
  run_times              INT NOT NULL DEFAULT 1,
  reason                 VARCHAR(1024) NOT NULL DEFAULT '',
  schedule_time          TIMESTAMP NULL,
  start_time             TIMESTAMP NULL,
  end_time               TIMESTAMP NULL,
  created_at             TIMESTAMP NOT NULL
);

CREATE TABLE task_instance (
  id                   BIGSERIAL PRIMARY KEY,
  workflow_instance_id BIGINT NOT NULL,
  name                 VARCHAR(128) NOT NULL,
  type                 VARCHAR(32) NOT NULL,
  state                VARCHAR(32) NOT NULL,
  attempt              INT NOT NULL DEFAULT 1,
  superseded           BOOLEAN NOT NULL DEFAULT FALSE,
  host                 VARCHAR(255) NOT NULL DEFAULT '',
  pid                  INT NOT NULL DEFAULT 0,
  log_path             VARCHAR(1024) NOT NULL DEFAULT '',
  exit_code            INT NULL,
  priority             SMALLINT NOT NULL,
  worker_group         VARCHAR(128) NOT NULL DEFAULT '',
  submit_time          TIMESTAMP NULL,
  dispatch_time        TIMESTAMP NULL,
  start_time           TIMESTAMP NULL,
  end_time             TIMESTAMP NULL
);

CREATE UNIQUE INDEX uk_project_name ON project (name);
CREATE UNIQUE INDEX uk_wfdef_version ON workflow_definition (project_id, name, version);
CREATE INDEX idx_taskdef_wf ON task_definition (workflow_definition_id);
CREATE INDEX idx_taskrel_wf ON task_relation (workflow_definition_id);
CREATE UNIQUE INDEX uk_worker_group_name ON worker_group (name);
CREATE INDEX idx_wfinst_state ON workflow_instance (state);
CREATE INDEX idx_wfinst_wf ON workflow_instance (project_name, workflow_name);
CREATE INDEX idx_taskinst_wf ON task_instance (workflow_instance_id);
CREATE INDEX idx_taskinst_state ON task_instance (state);
