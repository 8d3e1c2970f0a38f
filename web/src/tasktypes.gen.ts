// Generated from the task-type registry by go generate ./api (api/gentypes): do not edit.
// The palette, its help and each type's fields, as GET /api/v1/task-types serves them.

export const TASK_TYPES = ["shell", "python", "http", "sql", "sub_workflow", "dependent", "conditions", "switch"] as const;
export type TaskType = (typeof TASK_TYPES)[number];

export interface TaskTypeField {name: string; type?: string; items?: string}

export const TYPE_HELP: Record<TaskType, string> = {
  "shell": "a shell command on a worker",
  "python": "a Python script on a worker",
  "http": "an HTTP request, its status checked",
  "sql": "SQL on a datasource",
  "sub_workflow": "another workflow as a child instance",
  "dependent": "waits for runs of other workflows",
  "conditions": "branches on the upstreams' outcome",
  "switch": "branches on values",
};

export const TYPE_PLACEMENT: Record<TaskType, 'worker' | 'master'> = {
  "shell": "worker",
  "python": "worker",
  "http": "worker",
  "sql": "worker",
  "sub_workflow": "master",
  "dependent": "master",
  "conditions": "master",
  "switch": "master",
};

export const TYPE_FIELDS: Record<TaskType, TaskTypeField[]> = {
  "shell": [{"name":"command","type":"string"}],
  "python": [{"name":"command","type":"string"}],
  "http": [{"name":"method","type":"string"},{"name":"url","type":"string"},{"name":"headers","type":"object"},{"name":"body","type":"string"},{"name":"raw_body","type":"boolean"},{"name":"expect_status","type":"array","items":"integer"},{"name":"outputs","type":"object"},{"name":"insecure_skip_verify","type":"boolean"}],
  "sql": [{"name":"datasource","type":"string"},{"name":"sql"},{"name":"transaction","type":"boolean"}],
  "sub_workflow": [{"name":"workflow","type":"string"},{"name":"version","type":"integer"}],
  "dependent": [{"name":"wait_for","type":"array","items":"object"},{"name":"relation","type":"string"},{"name":"on_failed","type":"string"},{"name":"check_interval","type":"string"}],
  "conditions": [{"name":"on_success","type":"array","items":"string"},{"name":"on_failure","type":"array","items":"string"}],
  "switch": [{"name":"cases","type":"array","items":"object"},{"name":"default","type":"array","items":"string"}],
};
