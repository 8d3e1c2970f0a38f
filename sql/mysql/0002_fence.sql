-- Leadership fencing: the epoch of the current leader term. Every master write
-- that owns or changes instances and tasks first reads this row (shared lock)
-- and gives up when the epoch is not its own.
CREATE TABLE fence (
  id         INT NOT NULL PRIMARY KEY,
  epoch      BIGINT NOT NULL,
  host       VARCHAR(255) NOT NULL DEFAULT '',
  started_at DATETIME(6) NULL
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

INSERT INTO fence (id, epoch, host) VALUES (1, 0, '');
