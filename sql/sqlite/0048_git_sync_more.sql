-- Git-backed projects, the rest (README, "Workflows in Git"):
-- sync_interval is how often (minutes; 0 never) the leader master syncs the
-- binding by itself; mode says what an edit outside Git does ('' allowed,
-- 'read_only' refused, 'write_back' committed to the branch); the hook
-- secret authenticates the webhook and is sealed as the password is;
-- alert_channels (a JSON list) are told once per refused commit.
ALTER TABLE project_git ADD COLUMN sync_interval INT NOT NULL DEFAULT 0;
ALTER TABLE project_git ADD COLUMN mode VARCHAR(16) NOT NULL DEFAULT '';
ALTER TABLE project_git ADD COLUMN hook_secret_sealed TEXT;
ALTER TABLE project_git ADD COLUMN alert_channels TEXT;
-- The workflows that came from the project's repository, and their file: a
-- sync deletes the ones whose file is gone, and only those.
CREATE TABLE git_workflow (
  project_id    BIGINT NOT NULL,
  workflow_name VARCHAR(128) NOT NULL,
  path          VARCHAR(1024) NOT NULL,
  PRIMARY KEY (project_id, workflow_name)
);
