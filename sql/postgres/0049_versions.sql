-- Every run knows its exact definition (README, "Versions"):
-- git_commit is the commit a Git sync made a version from ('' for a
-- version applied by hand); a schedule's pin_version is the version its
-- fires run (0: the latest at each fire); an action command's version is
-- the version a rerun or recover_failed switches its run to (0: the run's
-- own version).
ALTER TABLE workflow_definition ADD COLUMN git_commit VARCHAR(64) NOT NULL DEFAULT '';
ALTER TABLE schedule ADD COLUMN pin_version INT NOT NULL DEFAULT 0;
ALTER TABLE command ADD COLUMN version INT NOT NULL DEFAULT 0;
