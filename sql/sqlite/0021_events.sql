-- The event outbox: every instance and task state change, written in the
-- transaction that made it (id: write order). The leader's publisher gives
-- committed rows their public sequence (seq, gap-free, in commit order seen
-- by the publisher); readers (SSE, webhooks, alerts) follow seq.
CREATE TABLE event (
  id               INTEGER PRIMARY KEY AUTOINCREMENT,
  seq              BIGINT NULL,
  time             DATETIME NOT NULL,
  kind             VARCHAR(16) NOT NULL,
  project          VARCHAR(128) NOT NULL DEFAULT '',
  workflow         VARCHAR(128) NOT NULL DEFAULT '',
  instance_id      BIGINT NOT NULL DEFAULT 0,
  task_instance_id BIGINT NOT NULL DEFAULT 0,
  task_name        VARCHAR(128) NOT NULL DEFAULT '',
  state            VARCHAR(32) NOT NULL,
  attempt          INT NOT NULL DEFAULT 0,
  detail_json      TEXT
);
CREATE UNIQUE INDEX uk_event_seq ON event (seq);

-- Webhook subscriptions: the secret is sealed (common/secret); cursor is the
-- last event seq delivered (or given up on).
CREATE TABLE subscription (
  id            INTEGER PRIMARY KEY AUTOINCREMENT,
  name          VARCHAR(128) NOT NULL,
  url           VARCHAR(2048) NOT NULL,
  project       VARCHAR(128) NOT NULL DEFAULT '',
  workflow      VARCHAR(128) NOT NULL DEFAULT '',
  instance_id   BIGINT NOT NULL DEFAULT 0,
  secret_sealed TEXT,
  cursor_seq    BIGINT NOT NULL DEFAULT 0,
  created_at    DATETIME NOT NULL,
  updated_at    DATETIME NOT NULL
);
CREATE UNIQUE INDEX uk_subscription_name ON subscription (name);

-- One row per POST attempt to a subscription.
CREATE TABLE delivery (
  id              INTEGER PRIMARY KEY AUTOINCREMENT,
  subscription_id BIGINT NOT NULL,
  event_seq       BIGINT NOT NULL,
  attempt         INT NOT NULL,
  status_code     INT NOT NULL DEFAULT 0,
  ok              TINYINT NOT NULL DEFAULT 0,
  error           VARCHAR(1024) NOT NULL DEFAULT '',
  duration_ms     BIGINT NOT NULL DEFAULT 0,
  time            DATETIME NOT NULL
);
CREATE INDEX idx_delivery_sub ON delivery (subscription_id, id);
