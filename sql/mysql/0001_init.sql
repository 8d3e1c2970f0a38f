-- Beluga schema v1 for MySQL / MariaDB. Times are UTC with microseconds.
CREATE TABLE project (
  id          BIGINT AUTO_INCREMENT PRIMARY KEY,
  name        VARCHAR(128) NOT NULL,
  description VARCHAR(1024) NOT NULL DEFAULT '',
  created_at  DATETIME(6) NOT NULL,
  UNIQUE KEY uk_project_name (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE workflow_definition (
  id               BIGINT AUTO_INCREMENT PRIMARY KEY,
  project_id       BIGINT NOT NULL,
  name             VARCHAR(128) NOT NULL,
  version          INT NOT NULL,
  spec_json        LONGTEXT NOT NULL,
  spec_hash        CHAR(64) NOT NULL,
  description      VARCHAR(1024) NOT NULL DEFAULT '',
  failure_strategy VARCHAR(16) NOT NULL,
  priority         TINYINT NOT NULL,
  worker_group     VARCHAR(128) NOT NULL,
  timeout_ms       BIGINT NOT NULL DEFAULT 0,
  task_count       INT NOT NULL,
  created_at       DATETIME(6) NOT NULL,
  UNIQUE KEY uk_wfdef_version (project_id, name, version)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE task_definition (
  id                     BIGINT AUTO_INCREMENT PRIMARY KEY,
  workflow_definition_id BIGINT NOT NULL,
  name                   VARCHAR(128) NOT NULL,
  type                   VARCHAR(32) NOT NULL,
  command                MEDIUMTEXT NOT NULL,
  priority               TINYINT NOT NULL,
  worker_group           VARCHAR(128) NOT NULL,
  retries                INT NOT NULL DEFAULT 0,
  retry_interval_ms      BIGINT NOT NULL DEFAULT 0,
  timeout_ms             BIGINT NOT NULL DEFAULT 0,
  KEY idx_taskdef_wf (workflow_definition_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE task_relation (
  id                     BIGINT AUTO_INCREMENT PRIMARY KEY,
  workflow_definition_id BIGINT NOT NULL,
  pre_task               VARCHAR(128) NOT NULL,
  post_task              VARCHAR(128) NOT NULL,
  KEY idx_taskrel_wf (workflow_definition_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE worker_group (
  id         BIGINT AUTO_INCREMENT PRIMARY KEY,
  name       VARCHAR(128) NOT NULL,
  created_at DATETIME(6) NOT NULL,
  UNIQUE KEY uk_worker_group_name (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE command (
  id                   BIGINT AUTO_INCREMENT PRIMARY KEY,
  type                 VARCHAR(32) NOT NULL,
  workflow_instance_id BIGINT NOT NULL,
  created_at           DATETIME(6) NOT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE workflow_instance (
  id                     BIGINT AUTO_INCREMENT PRIMARY KEY,
  project_id             BIGINT NOT NULL,
  project_name           VARCHAR(128) NOT NULL,
  workflow_name          VARCHAR(128) NOT NULL,
  workflow_definition_id BIGINT NOT NULL,
  version                INT NOT NULL,
  state                  VARCHAR(32) NOT NULL,
  command_type           VARCHAR(32) NOT NULL,
  host                   VARCHAR(255) NOT NULL DEFAULT '',
  epoch                  BIGINT NOT NULL DEFAULT 0,
  priority               TINYINT NOT NULL,
  worker_group           VARCHAR(128) NOT NULL DEFAULT '',
  params_json            TEXT,
  run_times              INT NOT NULL DEFAULT 1,
  reason                 VARCHAR(1024) NOT NULL DEFAULT '',
  schedule_time          DATETIME(6) NULL,
  start_time             DATETIME(6) NULL,
  end_time               DATETIME(6) NULL,
  created_at             DATETIME(6) NOT NULL,
  KEY idx_wfinst_state (state),
  KEY idx_wfinst_wf (project_name, workflow_name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE task_instance (
  id                   BIGINT AUTO_INCREMENT PRIMARY KEY,
  workflow_instance_id BIGINT NOT NULL,
  name                 VARCHAR(128) NOT NULL,
  type                 VARCHAR(32) NOT NULL,
  state                VARCHAR(32) NOT NULL,
  attempt              INT NOT NULL DEFAULT 1,
  superseded           TINYINT NOT NULL DEFAULT 0,
  host                 VARCHAR(255) NOT NULL DEFAULT '',
  pid                  INT NOT NULL DEFAULT 0,
  log_path             VARCHAR(1024) NOT NULL DEFAULT '',
  exit_code            INT NULL,
  priority             TINYINT NOT NULL,
  worker_group         VARCHAR(128) NOT NULL DEFAULT '',
  submit_time          DATETIME(6) NULL,
  dispatch_time        DATETIME(6) NULL,
  start_time           DATETIME(6) NULL,
  end_time             DATETIME(6) NULL,
  KEY idx_taskinst_wf (workflow_instance_id),
  KEY idx_taskinst_state (state)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
