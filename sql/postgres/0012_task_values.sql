-- Values passed between tasks: what each attempt ran with (params, resolved)
-- and what it exported (outputs), as JSON objects of strings.
ALTER TABLE task_instance ADD COLUMN params_json TEXT;
ALTER TABLE task_instance ADD COLUMN outputs_json TEXT;
