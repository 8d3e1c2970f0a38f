-- Users, their tokens, project grants and the audit trail (api/auth.go).
-- Passwords are bcrypt hashes; tokens are stored only as the SHA-256 of
-- the secret the user holds. A session (the UI's cookie, a login's token)
-- and a personal access token are both rows of auth_token, told apart by kind.
CREATE TABLE app_user (
  id            BIGINT AUTO_INCREMENT PRIMARY KEY,
  name          VARCHAR(64) NOT NULL,
  role          VARCHAR(16) NOT NULL,
  password_hash VARCHAR(255) NOT NULL,
  disabled      TINYINT NOT NULL DEFAULT 0,
  created_at    DATETIME(6) NOT NULL,
  updated_at    DATETIME(6) NOT NULL,
  UNIQUE KEY uk_app_user_name (name)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE auth_token (
  id           BIGINT AUTO_INCREMENT PRIMARY KEY,
  user_id      BIGINT NOT NULL,
  kind         VARCHAR(16) NOT NULL,
  name         VARCHAR(128) NOT NULL DEFAULT '',
  token_hash   CHAR(64) NOT NULL,
  expires_at   DATETIME(6) NOT NULL,
  created_at   DATETIME(6) NOT NULL,
  last_used_at DATETIME(6) NULL,
  UNIQUE KEY uk_auth_token_hash (token_hash),
  KEY idx_auth_token_user (user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE project_grant (
  project_id BIGINT NOT NULL,
  user_id    BIGINT NOT NULL,
  level      VARCHAR(16) NOT NULL,
  granted_by VARCHAR(64) NOT NULL,
  created_at DATETIME(6) NOT NULL,
  PRIMARY KEY (project_id, user_id),
  KEY idx_project_grant_user (user_id)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;

CREATE TABLE audit_log (
  id         BIGINT AUTO_INCREMENT PRIMARY KEY,
  at         DATETIME(6) NOT NULL,
  username   VARCHAR(64) NOT NULL,
  action     VARCHAR(128) NOT NULL,
  resource   VARCHAR(1024) NOT NULL,
  address    VARCHAR(128) NOT NULL,
  status     INT NOT NULL,
  outcome    VARCHAR(1024) NOT NULL DEFAULT '',
  KEY idx_audit_at (at),
  KEY idx_audit_user (username, at)
) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4;
