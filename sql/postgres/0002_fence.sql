-- Leadership fencing (same as sql/mysql/0002_fence.sql).
CREATE TABLE fence (
  id         INTEGER NOT NULL PRIMARY KEY,
  epoch      BIGINT NOT NULL,
  host       VARCHAR(255) NOT NULL DEFAULT '',
  started_at TIMESTAMP NULL
);

INSERT INTO fence (id, epoch, host) VALUES (1, 0, '');
