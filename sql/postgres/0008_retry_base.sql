-- The attempt that began a task's current retry budget: a new instance's
-- first attempt, or the attempt a rerun or recover_failed started. Retries
-- and failed-over attempts keep it, so the retry check reads its budget
-- from the row and a new leader computes it the same.
ALTER TABLE task_instance ADD COLUMN retry_base INT NOT NULL DEFAULT 1;
