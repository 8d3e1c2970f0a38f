-- A run a schedule fired ahead of its second (the cron scheduler writes a
-- burst about a second early, so nothing is left to write at the second):
-- its start command is not claimed before not_before, the run's schedule
-- time. NULL: claimable at once (every other command).
ALTER TABLE command ADD COLUMN not_before DATETIME(6) NULL;
