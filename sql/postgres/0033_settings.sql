-- Whether non-admins may apply and run shell and python tasks on a server
-- that is not root (its tasks run as its own OS user, unsandboxed): 0
-- refuses them, 1 allows (docs/security.md, item 1; api/codegate.go).
INSERT INTO setting (name, value, updated_at) VALUES ('tasks.allow_unsandboxed_code', '0', CURRENT_TIMESTAMP);
-- The versions one workflow keeps: an apply making one more is refused.
INSERT INTO setting (name, value, updated_at) VALUES ('quota.versions_per_workflow', '1000', CURRENT_TIMESTAMP);
