-- Webhook triggers (README, "Webhook triggers"): a workflow's named
-- trigger with its own token (token_hash: the SHA-256 of the secret, as
-- auth_token's; the secret is shown once), its mapping from run params to
-- paths into the delivery's JSON (params_json) and whether it is enabled.
-- Triggers are not in the workflow spec: their tokens are credentials.
CREATE TABLE workflow_trigger (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  project_id    BIGINT NOT NULL,
  workflow_name VARCHAR(255) NOT NULL,
  name          VARCHAR(255) NOT NULL,
  token_hash    VARCHAR(64) NOT NULL,
  params_json   TEXT NOT NULL,
  enabled       BOOLEAN NOT NULL DEFAULT TRUE,
  created_by    VARCHAR(255) NOT NULL DEFAULT '',
  created_at    DATETIME NOT NULL,
  rotated_at    DATETIME NULL
);
CREATE UNIQUE INDEX uk_trigger_name ON workflow_trigger (project_id, workflow_name, name);

-- Every delivery to a trigger: when, its Idempotency-Key, the outcome
-- (accepted, duplicate, refused), why a refused one was and the run an
-- accepted or duplicate one names. dedupe_key is the key of an accepted
-- delivery only (NULL otherwise): the unique index makes two deliveries
-- with one key start one run, even when they race on two API servers,
-- while a refused delivery's key stays free for its retry.
CREATE TABLE trigger_delivery (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  trigger_id      BIGINT NOT NULL,
  received_at     DATETIME NOT NULL,
  idempotency_key VARCHAR(255) NOT NULL DEFAULT '',
  dedupe_key      VARCHAR(255) NULL,
  outcome         VARCHAR(16) NOT NULL,
  reason          VARCHAR(1024) NOT NULL DEFAULT '',
  run_id          BIGINT NULL
);
CREATE UNIQUE INDEX uk_trigger_delivery_key ON trigger_delivery (trigger_id, dedupe_key);
CREATE INDEX idx_trigger_delivery ON trigger_delivery (trigger_id, id);
