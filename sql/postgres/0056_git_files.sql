-- Git-backed projects, the files beside the workflows (README, "Workflows
-- in Git"): the schedules that came from the project's repository, and
-- their file (kind 'schedule', name the workflow's), so a sync deletes the
-- ones whose file is gone, and only those. An SSH binding's private key is
-- sealed as the password is; known_hosts holds the host keys (lines of an
-- OpenSSH known_hosts file) or SHA256 fingerprints the server must show.
CREATE TABLE git_file (
  project_id  BIGINT NOT NULL,
  kind        VARCHAR(16) NOT NULL,
  name        VARCHAR(128) NOT NULL,
  path        VARCHAR(1024) NOT NULL,
  PRIMARY KEY (project_id, kind, name)
);
ALTER TABLE project_git ADD COLUMN ssh_key_sealed TEXT;
ALTER TABLE project_git ADD COLUMN known_hosts TEXT;
