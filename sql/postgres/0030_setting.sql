-- Server-wide settings an admin edits (GET/PUT /api/v1/settings): the
-- quotas that keep one user from exhausting the server. A name missing here
-- takes its default from the code (api/quota.go), the same as seeded below.
CREATE TABLE setting (
  name       VARCHAR(128) NOT NULL PRIMARY KEY,
  value      VARCHAR(256) NOT NULL,
  updated_at TIMESTAMP NOT NULL
);
INSERT INTO setting (name, value, updated_at) VALUES ('quota.event_streams_per_user', '8', CURRENT_TIMESTAMP);
INSERT INTO setting (name, value, updated_at) VALUES ('quota.log_reads_per_user', '4', CURRENT_TIMESTAMP);
INSERT INTO setting (name, value, updated_at) VALUES ('quota.spec_upload_bytes', '33554432', CURRENT_TIMESTAMP);
INSERT INTO setting (name, value, updated_at) VALUES ('quota.sub_workflow_depth', '10', CURRENT_TIMESTAMP);
INSERT INTO setting (name, value, updated_at) VALUES ('quota.instances_per_run', '200', CURRENT_TIMESTAMP);

-- A run's tree of sub_workflow children is walked by parent (the quota on
-- instances per root run counts it at each new child).
CREATE INDEX idx_wfinst_parent ON workflow_instance (parent_instance_id);
