-- The event outbox: every instance and task state change, written in the
-- transaction that made it (id: write order). The leader's publisher gives
-- committed rows their public sequence (seq, gap-free, in commit order seen
-- by the publisher); readers (SSE, webhooks, alerts) follow seq.
CREATE TABLE event (
  id               BIGINT AUTO_INCREMENT PRIMARY KEY,
  seq              BIGINT NULL,
  time             DATETIME(6) NOT NULL,
  kind             VARCHAR(16) NOT NULL,
  project          VARCHAR(128) NOT NULL DEFAULT '',
  workflow         VARCHAR(128) NOT NULL DEFAULT '',
  instance_id      BIGINT NOT NULL DEFAULT 0,
  task_instance_id BIGINT NOT NULL DEFAULT 0,
  task_name        VARCHAR(128) NOT NULL DEFAULT '',
  state            VARCHAR(32) NOT NULL,
  attempt          INT NOT NULL DEFAULT 0,
  detail_json      TEXT,
  UNIQUE KEY uk_event_seq (seq)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- Webhook subscriptions: the secret is sealed (common/secret); cursor is the
-- last event seq delivered (or given up on).
CREATE TABLE subscription (
  id            BIGINT AUTO_INCREMENT PRIMARY KEY,
  name          VARCHAR(128) NOT NULL,
  url           VARCHAR(2048) NOT NULL,
  project       VARCHAR(128) NOT NULL DEFAULT '',
  workflow      VARCHAR(128) NOT NULL DEFAULT '',
  instance_id   BIGINT NOT NULL DEFAULT 0,
  secret_sealed TEXT,
  cursor_seq    BIGINT NOT NULL DEFAULT 0,
  created_at    DATETIME(6) NOT NULL,
  updated_at    DATETIME(6) NOT NULL,
  UNIQUE KEY uk_subscription_name (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

-- One row per POST attempt to a subscription.
CREATE TABLE delivery (
  id              BIGINT AUTO_INCREMENT PRIMARY KEY,
  subscription_id BIGINT NOT NULL,
  event_seq       BIGINT NOT NULL,
  attempt         INT NOT NULL,
  status_code     INT NOT NULL DEFAULT 0,
  ok              TINYINT NOT NULL DEFAULT 0,
  error           VARCHAR(1024) NOT NULL DEFAULT '',
  duration_ms     BIGINT NOT NULL DEFAULT 0,
  time            DATETIME(6) NOT NULL,
  KEY idx_delivery_sub (subscription_id, id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
