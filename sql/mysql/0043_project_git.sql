-- A project's Git binding (README, "Workflows in Git"): the repository
-- (a local path or a URL), its branch and the directory in it holding the
-- project's files; password_sealed is the credential sealed as datasource
-- passwords are (under the secret key file), never in clear. The last_*
-- columns are the sync state: the last commit applied, and the last
-- sync's outcome (a refused commit names its file and the reason).
CREATE TABLE project_git (
  project_id       BIGINT NOT NULL PRIMARY KEY,
  url              VARCHAR(2048) NOT NULL,
  branch           VARCHAR(255) NOT NULL DEFAULT '',
  dir              VARCHAR(1024) NOT NULL DEFAULT '',
  username         VARCHAR(255) NOT NULL DEFAULT '',
  password_sealed  MEDIUMTEXT,
  bound_by         VARCHAR(255) NOT NULL DEFAULT '',
  updated_at       DATETIME(6) NOT NULL,
  last_commit      VARCHAR(64) NOT NULL DEFAULT '',
  last_synced_at   DATETIME(6) NULL,
  last_attempt_commit VARCHAR(64) NOT NULL DEFAULT '',
  last_error_file  VARCHAR(1024) NOT NULL DEFAULT '',
  last_error       MEDIUMTEXT
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
