-- The event outbox: every instance and task state change, written in the
-- transaction that made it (id: write order). The leader's publisher gives
-- committed rows their public sequence (seq, gap-free, in commit order seen
-- by the publisher); readers (SSE, webhooks, alerts) follow seq.
CREATE TABLE event (
  id               BIGSERIAL PRIMARY KEY,
  seq              BIGINT NULL,
  time             TIMESTAMP NOT NULL,
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
  id            BIGSERIAL PRIMARY KEY,
  name          VARCHAR(128) NOT NULL,
  url           VARCHAR(2048) NOT NULL,
  project       VARCHAR(128) NOT NULL DEFAULT '',
  workflow      VARCHAR(128) NOT NULL DEFAULT '',
  instance_id   BIGINT NOT NULL DEFAULT 0,
  secret_sealed TEXT,
  cursor_seq    BIGINT NOT NULL DEFAULT 0,
  created_at    TIMESTAMP NOT NULL,
  updated_at    TIMESTAMP NOT NULL
);
CREATE UNIQUE INDEX uk_subscription_name ON subscription (name);

-- One row per POST attempt to a subscription.
CREATE TABLE delivery (
  id              BIGSERIAL PRIMARY KEY,
  subscription_id BIGINT NOT NULL,
  event_seq       BIGINT NOT NULL,
  attempt         INT NOT NULL,
  status_code     INT NOT NULL DEFAULT 0,
  ok              BOOLEAN NOT NULL DEFAULT FALSE,
  error           VARCHAR(1024) NOT NULL DEFAULT '',
  duration_ms     BIGINT NOT NULL DEFAULT 0,
  time            TIMESTAMP NOT NULL
);
CREATE INDEX idx_delivery_sub ON delivery (subscription_id, id);

-- Alert channels: where alerts go (webhook, email, script). config_json
-- holds the kind's settings; secret_sealed its password or token, sealed.
CREATE TABLE alert_channel (
  id            BIGSERIAL PRIMARY KEY,
  name          VARCHAR(128) NOT NULL,
  kind          VARCHAR(16) NOT NULL,
  config_json   TEXT NOT NULL,
  secret_sealed TEXT,
  created_at    TIMESTAMP NOT NULL,
  updated_at    TIMESTAMP NOT NULL
);
CREATE UNIQUE INDEX uk_alert_channel_name ON alert_channel (name);

-- Alerts sent or to send, one per (what happened, channel): dedupe_key
-- makes an instance outcome alert once, whichever leader plans it.
CREATE TABLE alert (
  id          BIGSERIAL PRIMARY KEY,
  dedupe_key  VARCHAR(255) NOT NULL,
  channel     VARCHAR(128) NOT NULL,
  kind        VARCHAR(16) NOT NULL,
  project     VARCHAR(128) NOT NULL DEFAULT '',
  workflow    VARCHAR(128) NOT NULL DEFAULT '',
  instance_id BIGINT NOT NULL DEFAULT 0,
  message     VARCHAR(2048) NOT NULL DEFAULT '',
  state       VARCHAR(16) NOT NULL,
  attempts    INT NOT NULL DEFAULT 0,
  last_error  VARCHAR(1024) NOT NULL DEFAULT '',
  next_at     TIMESTAMP NOT NULL,
  created_at  TIMESTAMP NOT NULL,
  sent_at     TIMESTAMP NULL
);
CREATE UNIQUE INDEX uk_alert_dedupe ON alert (dedupe_key);
CREATE INDEX idx_alert_state ON alert (state, next_at);

-- The alert planner's place in the event stream (one row).
CREATE TABLE alert_cursor (
  id  INT NOT NULL PRIMARY KEY,
  seq BIGINT NOT NULL
);
INSERT INTO alert_cursor (id, seq) VALUES (1, 0);

-- A schedule's alerts and deadline override its workflow's for its runs.
ALTER TABLE schedule ADD COLUMN alerts_json TEXT;
ALTER TABLE schedule ADD COLUMN deadline VARCHAR(32) NOT NULL DEFAULT '';
