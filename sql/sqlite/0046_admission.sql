-- The leader's admission state (docs/architecture.md, Admission): while it
-- claims no new runs because one of its limits is reached, reason says which
-- ("waiting: master at 500 running instances (admission.max_running_instances)"),
-- since when; '' while it admits. Written by the leader in a fenced
-- transaction when the state changes; epoch says which term wrote it, so a
-- reader ignores what an earlier leader left.
CREATE TABLE admission (
  id     INTEGER NOT NULL PRIMARY KEY,
  epoch  BIGINT NOT NULL,
  reason VARCHAR(1024) NOT NULL DEFAULT '',
  since  DATETIME NULL
);

INSERT INTO admission (id, epoch, reason) VALUES (1, 0, '');

-- The leader's admission limits (README, Settings), seeded with the code's
-- defaults.
INSERT INTO setting (name, value, updated_at) VALUES ('admission.max_running_instances', '20000', CURRENT_TIMESTAMP);
INSERT INTO setting (name, value, updated_at) VALUES ('admission.max_pending_events', '1000000', CURRENT_TIMESTAMP);
INSERT INTO setting (name, value, updated_at) VALUES ('admission.claim_batch', '64', CURRENT_TIMESTAMP);
