-- Why a task instance waits, when what makes it wait is not in the rows the
-- API reads (a dependent task waiting on another workflow, say): its cause
-- ("dependent", ...) and a sentence. Empty when the API derives the reason
-- itself (upstreams, queue, workers, task group, platform cap, retry).
ALTER TABLE task_instance ADD COLUMN wait_cause VARCHAR(32) NOT NULL DEFAULT '';
ALTER TABLE task_instance ADD COLUMN wait_reason VARCHAR(512) NOT NULL DEFAULT '';
