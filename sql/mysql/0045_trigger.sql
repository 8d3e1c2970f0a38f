-- Webhook triggers (README, "Webhook triggers"): a workflow's named
-- trigger with its own token (token_hash: the SHA-256 of the secret, as
-- auth_token's; the secret is shown once), its mapping from run params to
-- paths into the delivery's JSON (params_json) and whether it is enabled.
-- Triggers are not in the workflow spec: their tokens are credentials.
CREATE TABLE workflow_trigger (
  id            BIGINT AUTO_INCREMENT PRIMARY KEY,
  project_id    BIGINT NOT NULL,
  workflow_name VARCHAR(255) NOT NULL,
  name          VARCHAR(255) NOT NULL,
  token_hash    VARCHAR(64) NOT NULL,
  params_json   MEDIUMTEXT NOT NULL,
  enabled       BOOLEAN NOT NULL DEFAULT TRUE,
  created_by    VARCHAR(255) NOT NULL DEFAULT '',
  created_at    DATETIME(6) NOT NULL,
  rotated_at    DATETIME(6) NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE UNIQUE INDEX uk_trigger_name ON workflow_trigger (project_id, workflow_name, name);

-- Every delivery to a trigger: when, its Idempotency-Key, the outcome
-- (accepted, duplicate, refused), why a refused one was and the run an
-- accepted or duplicate one names. dedupe_key is the key of an accepted
-- delivery only (NULL otherwise): the unique index makes two deliveries
-- with one key start one run, even when they race on two API servers,
-- while a refused delivery's key stays free for its retry.
CREATE TABLE trigger_delivery (
  id              BIGINT AUTO_INCREMENT PRIMARY KEY,
  trigger_id      BIGINT NOT NULL,
  received_at     DATETIME(6) NOT NULL,
  idempotency_key VARCHAR(255) NOT NULL DEFAULT '',
  dedupe_key      VARCHAR(255) NULL,
  outcome         VARCHAR(16) NOT NULL,
  reason          VARCHAR(1024) NOT NULL DEFAULT '',
  run_id          BIGINT NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
CREATE UNIQUE INDEX uk_trigger_delivery_key ON trigger_delivery (trigger_id, dedupe_key);
CREATE INDEX idx_trigger_delivery ON trigger_delivery (trigger_id, id);
