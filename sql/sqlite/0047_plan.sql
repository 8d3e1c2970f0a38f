-- Impact plans (docs/architecture.md, "Plans"): what an action that starts
-- work would run, stored when asked for and applied by id. plan_json is the
-- plan as answered; facts_json what it saw of the world (instance states,
-- task attempts, waiting commands, schedules), read again when it is
-- applied: a change refuses the apply. applied_at set: applied, never again.
CREATE TABLE plan (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  project_id    BIGINT NOT NULL,
  instance_id   BIGINT NOT NULL,
  action        VARCHAR(32) NOT NULL,
  downstream    VARCHAR(16) NOT NULL,
  plan_json     TEXT NOT NULL,
  facts_json    TEXT NOT NULL,
  created_by    VARCHAR(255) NOT NULL DEFAULT '',
  created_at    DATETIME NOT NULL,
  expires_at    DATETIME NOT NULL,
  applied_at    DATETIME NULL,
  applied_by    VARCHAR(255) NOT NULL DEFAULT ''
);
-- The runs of each plan: retention keeps the runs of an unapplied,
-- unexpired plan (a pinned one).
CREATE TABLE plan_instance (
  plan_id     BIGINT NOT NULL,
  instance_id BIGINT NOT NULL,
  PRIMARY KEY (plan_id, instance_id)
);
CREATE INDEX idx_plan_instance_instance ON plan_instance (instance_id);
