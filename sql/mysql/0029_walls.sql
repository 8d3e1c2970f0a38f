-- Projects are walls (docs/security.md, sections 3 and 4).
-- applied_by is the user who applied a workflow version ('' : the server's
-- own code, not a user). At run, the version's cross-project references
-- (sub_workflow, dependent) and the datasources of its sql tasks are checked
-- against that user's grants as they are then. Versions from before this
-- file have no known author: they get a name no user can have, so what they
-- reach outside their project fails at run until someone re-applies them.
ALTER TABLE workflow_definition ADD COLUMN applied_by VARCHAR(64) NOT NULL DEFAULT '';
UPDATE workflow_definition SET applied_by = '(before 0029)';
-- The projects an admin granted a datasource to: their workflows' sql tasks
-- may use it. A datasource granted to no project is for admins' workflows.
CREATE TABLE datasource_grant (
  datasource_id BIGINT NOT NULL,
  project_id    BIGINT NOT NULL,
  granted_by    VARCHAR(64) NOT NULL,
  created_at    DATETIME NOT NULL,
  PRIMARY KEY (datasource_id, project_id)
);
CREATE INDEX idx_datasource_grant_project ON datasource_grant (project_id);
-- The same for task groups: a task may take the slots of a group granted to
-- its project (or any group, in a version an admin applied).
CREATE TABLE task_group_grant (
  task_group_id BIGINT NOT NULL,
  project_id    BIGINT NOT NULL,
  granted_by    VARCHAR(64) NOT NULL,
  created_at    DATETIME NOT NULL,
  PRIMARY KEY (task_group_id, project_id)
);
CREATE INDEX idx_task_group_grant_project ON task_group_grant (project_id);
