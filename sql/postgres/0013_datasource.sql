-- Managed datasources: connection details of the databases sql tasks run
-- against. The password is sealed by the API (common/secret) and stored
-- only encrypted. task_definition.datasource names the one a task uses, so
-- a datasource still named by a workflow's latest version is not deleted.
CREATE TABLE datasource (
  id              BIGSERIAL PRIMARY KEY,
  name            VARCHAR(128) NOT NULL,
  type            VARCHAR(16) NOT NULL,
  host            VARCHAR(255) NOT NULL DEFAULT '',
  port            INT NOT NULL DEFAULT 0,
  db_name         VARCHAR(1024) NOT NULL DEFAULT '',
  db_user         VARCHAR(255) NOT NULL DEFAULT '',
  password_sealed TEXT,
  params_json     TEXT,
  created_at      TIMESTAMP NOT NULL,
  updated_at      TIMESTAMP NOT NULL
);
CREATE UNIQUE INDEX uk_datasource_name ON datasource (name);

ALTER TABLE task_definition ADD COLUMN datasource VARCHAR(128) NOT NULL DEFAULT '';
CREATE INDEX idx_taskdef_datasource ON task_definition (datasource);
