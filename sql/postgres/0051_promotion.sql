-- Promotion with review (README, "Promotion with review"). project_promotion
-- is a target project's gate: the project its changes come from and
-- whether they must be reviewed (require_review: its schedules run the
-- last promoted version only), and the alert channels told of drift.
CREATE TABLE project_promotion (
  project_id      BIGINT NOT NULL PRIMARY KEY,
  source_project  VARCHAR(255) NOT NULL DEFAULT '',
  require_review  BOOLEAN NOT NULL DEFAULT FALSE,
  alert_channels  TEXT,
  updated_by      VARCHAR(255) NOT NULL DEFAULT '',
  updated_at      TIMESTAMP NOT NULL
);
-- A change request: one version of a source workflow (its sealed spec
-- kept as reviewed) proposed for the target project, against the target's
-- version at the time (base_version, 0: none). state is open, applied
-- (approved and applied as target version applied_version) or rejected.
CREATE TABLE change_request (
  id              BIGSERIAL PRIMARY KEY,
  target_project_id BIGINT NOT NULL,
  workflow        VARCHAR(128) NOT NULL,
  source_project  VARCHAR(255) NOT NULL,
  source_version  INT NOT NULL,
  source_hash     VARCHAR(128) NOT NULL DEFAULT '',
  spec_json       TEXT NOT NULL,
  base_version    INT NOT NULL DEFAULT 0,
  message         TEXT,
  author          VARCHAR(255) NOT NULL,
  state           VARCHAR(16) NOT NULL,
  reviewer        VARCHAR(255) NOT NULL DEFAULT '',
  review_comment  TEXT,
  applied_version INT NOT NULL DEFAULT 0,
  created_at      TIMESTAMP NOT NULL,
  reviewed_at     TIMESTAMP NULL
);
CREATE INDEX idx_change_request_target ON change_request (target_project_id, state, id);
-- A promotion-gated workflow edited outside promotion: since_version is
-- the first version made so; the row goes when a promotion is applied.
-- Its insert is what raises the drift event (and alert) once.
CREATE TABLE promotion_drift (
  project_id      BIGINT NOT NULL,
  workflow_name   VARCHAR(128) NOT NULL,
  since_version   INT NOT NULL,
  promoted_version INT NOT NULL,
  edited_by       VARCHAR(255) NOT NULL DEFAULT '',
  detected_at     TIMESTAMP NOT NULL,
  PRIMARY KEY (project_id, workflow_name)
);
