-- Operator actions and task groups (same as sql/mysql/0003_actions.sql).
ALTER TABLE command ADD COLUMN task_instance_id BIGINT NULL;
ALTER TABLE command ADD COLUMN action VARCHAR(32) NOT NULL DEFAULT '';
ALTER TABLE command ADD COLUMN requested_by VARCHAR(128) NOT NULL DEFAULT '';
CREATE INDEX idx_command_type ON command (type, id);

CREATE TABLE instance_history (
  id                   BIGSERIAL PRIMARY KEY,
  workflow_instance_id BIGINT NOT NULL,
  task_instance_id     BIGINT NULL,
  action               VARCHAR(32) NOT NULL,
  requested_by         VARCHAR(128) NOT NULL DEFAULT '',
  at                   TIMESTAMP NOT NULL,
  detail               VARCHAR(1024) NOT NULL DEFAULT ''
);
CREATE INDEX idx_insthist_wf ON instance_history (workflow_instance_id, id);

CREATE TABLE task_group (
  id          BIGSERIAL PRIMARY KEY,
  name        VARCHAR(128) NOT NULL,
  capacity    INT NOT NULL,
  description VARCHAR(1024) NOT NULL DEFAULT '',
  created_at  TIMESTAMP NOT NULL
);
CREATE UNIQUE INDEX uk_task_group_name ON task_group (name);

ALTER TABLE task_instance ADD COLUMN task_group VARCHAR(128) NOT NULL DEFAULT '';
CREATE INDEX idx_taskinst_group ON task_instance (task_group, state);
