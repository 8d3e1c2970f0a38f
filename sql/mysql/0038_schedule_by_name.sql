-- A schedule is read, replaced and deleted by its project's and workflow's
-- names (the API's path), and listed a page at a time in that order: an
-- index, so one schedule costs the same however many exist (before, each
-- was a scan of the table).
CREATE INDEX idx_schedule_names ON schedule (project_name, workflow_name);
