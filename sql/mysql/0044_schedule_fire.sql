-- The ledger of fires: one row per due fire time of a schedule, written in
-- the transaction that decided it (the run's start, or the skip, the
-- queueing, the refusal), so a new leader can never write a second one for
-- a time (unique on schedule and time). outcome: fired, skipped_overlap,
-- queued, replaced, refused_calendar, missed (due while no master fired or
-- the schedule was paused, and not run by its catch-up policy) or
-- compensated (a missed fire run later by hand); workflow_instance_id is the
-- run it made (NULL: none). The rows go with their schedule.
CREATE TABLE schedule_fire (
  id                   BIGINT AUTO_INCREMENT PRIMARY KEY,
  schedule_id          BIGINT NOT NULL,
  due_time             DATETIME(6) NOT NULL,
  outcome              VARCHAR(32) NOT NULL,
  workflow_instance_id BIGINT NULL,
  created_at           DATETIME(6) NOT NULL,
  updated_at           DATETIME(6) NOT NULL,
  UNIQUE KEY uk_schedule_fire (schedule_id, due_time)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
