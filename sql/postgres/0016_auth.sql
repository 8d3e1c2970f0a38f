-- Users, their tokens, project grants and the audit trail (api/auth.go).
-- Passwords are bcrypt hashes; tokens are stored only as the SHA-256 of
-- the secret the user holds. A session (the UI's cookie, a login's token)
-- and a personal access token are both rows of auth_token, told apart by kind.
CREATE TABLE app_user (
  id            BIGSERIAL PRIMARY KEY,
  name          VARCHAR(64) NOT NULL,
  role          VARCHAR(16) NOT NULL,
  password_hash VARCHAR(255) NOT NULL,
  disabled      BOOLEAN NOT NULL DEFAULT FALSE,
  created_at    TIMESTAMP NOT NULL,
  updated_at    TIMESTAMP NOT NULL
);
CREATE UNIQUE INDEX uk_app_user_name ON app_user (name);

CREATE TABLE auth_token (
  id           BIGSERIAL PRIMARY KEY,
  user_id      BIGINT NOT NULL,
  kind         VARCHAR(16) NOT NULL,
  name         VARCHAR(128) NOT NULL DEFAULT '',
  token_hash   CHAR(64) NOT NULL,
  expires_at   TIMESTAMP NOT NULL,
  created_at   TIMESTAMP NOT NULL,
  last_used_at TIMESTAMP
);
CREATE UNIQUE INDEX uk_auth_token_hash ON auth_token (token_hash);
CREATE INDEX idx_auth_token_user ON auth_token (user_id);

CREATE TABLE project_grant (
  project_id BIGINT NOT NULL,
  user_id    BIGINT NOT NULL,
  level      VARCHAR(16) NOT NULL,
  granted_by VARCHAR(64) NOT NULL,
  created_at TIMESTAMP NOT NULL,
  PRIMARY KEY (project_id, user_id)
);
CREATE INDEX idx_project_grant_user ON project_grant (user_id);

CREATE TABLE audit_log (
  id         BIGSERIAL PRIMARY KEY,
  at         TIMESTAMP NOT NULL,
  username   VARCHAR(64) NOT NULL,
  action     VARCHAR(128) NOT NULL,
  resource   VARCHAR(1024) NOT NULL,
  address    VARCHAR(128) NOT NULL,
  status     INT NOT NULL,
  outcome    VARCHAR(1024) NOT NULL DEFAULT ''
);
CREATE INDEX idx_audit_at ON audit_log (at);
CREATE INDEX idx_audit_user ON audit_log (username, at);
