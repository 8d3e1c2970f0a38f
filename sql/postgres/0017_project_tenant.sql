-- A project's tenant: the OS user its workflows' shell and python tasks run
-- as when neither the workflow nor the task names one ('' : the worker's user).
ALTER TABLE project ADD COLUMN tenant VARCHAR(32) NOT NULL DEFAULT '';
