-- Data-aware scheduling (README, "Data-aware scheduling").
--
-- dataset_ref: what each workflow's latest version declares, rewritten
-- with each new version: the datasets it consumes (on_datasets, with the
-- input's grain and the late_data policy) and those its tasks produce
-- (task_name). It answers "who produces and consumes this dataset" and
-- lets the leader find a dataset's consumers without reading specs.
CREATE TABLE dataset_ref (
  id            BIGSERIAL PRIMARY KEY,
  project_id    BIGINT NOT NULL,
  workflow_name VARCHAR(255) NOT NULL,
  dataset       VARCHAR(200) NOT NULL,
  role          VARCHAR(16) NOT NULL,
  grain         VARCHAR(16) NOT NULL DEFAULT '',
  late_data     VARCHAR(16) NOT NULL DEFAULT '',
  run_grain     VARCHAR(16) NOT NULL DEFAULT '',
  task_name     VARCHAR(255) NOT NULL DEFAULT ''
);
CREATE INDEX idx_dataset_ref_ds ON dataset_ref (project_id, dataset);
CREATE INDEX idx_dataset_ref_wf ON dataset_ref (project_id, workflow_name);

-- dataset_event: one produced partition. producer is who produced it:
-- "task:<task instance id>" (written in the task's success transaction) or
-- "ext:<Idempotency-Key>" for an event posted from outside; the unique
-- index makes each producer's event for a partition exactly once.
-- evaluated is cleared until the leader has decided what the event
-- starts, in the transaction that starts it.
CREATE TABLE dataset_event (
  id               BIGSERIAL PRIMARY KEY,
  project_id       BIGINT NOT NULL,
  dataset          VARCHAR(200) NOT NULL,
  partition_key    VARCHAR(32) NOT NULL,
  producer         VARCHAR(255) NOT NULL,
  task_instance_id BIGINT NULL,
  run_id           BIGINT NULL,
  produced_by      VARCHAR(255) NOT NULL DEFAULT '',
  produced_at      TIMESTAMP NOT NULL,
  evaluated        BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE UNIQUE INDEX uk_dataset_event ON dataset_event (project_id, dataset, partition_key, producer);
CREATE INDEX idx_dataset_event_eval ON dataset_event (evaluated, id);
CREATE INDEX idx_dataset_event_run ON dataset_event (run_id);

-- dataset_fire: the ledger of a consumer's partitions, one row per
-- decision, written with the run it starts. dedupe_key is the partition
-- for its first run and partition#event for a rerun (NULL for an ignored
-- re-produce): unique per workflow, so one partition runs once, whatever
-- leader decides it. covered_event_id is the newest input event the
-- decision saw; an event at or below it changes nothing.
CREATE TABLE dataset_fire (
  id               BIGSERIAL PRIMARY KEY,
  project_id       BIGINT NOT NULL,
  workflow_name    VARCHAR(255) NOT NULL,
  partition_key    VARCHAR(32) NOT NULL,
  dedupe_key       VARCHAR(64) NULL,
  event_id         BIGINT NOT NULL,
  covered_event_id BIGINT NOT NULL,
  outcome          VARCHAR(16) NOT NULL,
  reason           VARCHAR(1024) NOT NULL DEFAULT '',
  run_id           BIGINT NULL,
  fired_at         TIMESTAMP NOT NULL
);
CREATE UNIQUE INDEX uk_dataset_fire ON dataset_fire (project_id, workflow_name, dedupe_key);
CREATE INDEX idx_dataset_fire_part ON dataset_fire (project_id, workflow_name, partition_key, id);
CREATE INDEX idx_dataset_fire_run ON dataset_fire (run_id);
