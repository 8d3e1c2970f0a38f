-- Operator actions and task groups.
-- Action commands share the command queue with start commands: type 'action',
-- the action's name and who asked. Start commands keep type 'start' and
-- leave the new columns empty.
ALTER TABLE command ADD COLUMN task_instance_id BIGINT NULL;
ALTER TABLE command ADD COLUMN action VARCHAR(32) NOT NULL DEFAULT '';
ALTER TABLE command ADD COLUMN requested_by VARCHAR(128) NOT NULL DEFAULT '';
CREATE INDEX idx_command_type ON command (type, id);

-- What operators asked of an instance and what the master did about it.
CREATE TABLE instance_history (
  id                   BIGINT AUTO_INCREMENT PRIMARY KEY,
  workflow_instance_id BIGINT NOT NULL,
  task_instance_id     BIGINT NULL,
  action               VARCHAR(32) NOT NULL,
  requested_by         VARCHAR(128) NOT NULL DEFAULT '',
  at                   DATETIME(6) NOT NULL,
  detail               VARCHAR(1024) NOT NULL DEFAULT '',
  KEY idx_insthist_wf (workflow_instance_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- Named concurrency limits shared across workflows and projects.
CREATE TABLE task_group (
  id          BIGINT AUTO_INCREMENT PRIMARY KEY,
  name        VARCHAR(128) NOT NULL,
  capacity    INT NOT NULL,
  description VARCHAR(1024) NOT NULL DEFAULT '',
  created_at  DATETIME(6) NOT NULL,
  UNIQUE KEY uk_task_group_name (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- The group a task instance counts against ('' for none).
ALTER TABLE task_instance ADD COLUMN task_group VARCHAR(128) NOT NULL DEFAULT '';
CREATE INDEX idx_taskinst_group ON task_instance (task_group, state);
