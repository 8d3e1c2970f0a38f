// The typed API client: the routes the React pages call, with the types of
// what they send and get. client.test.ts checks both against the API's
// OpenAPI document (api/openapi.yaml): every route is one it declares, and
// every field of a type is a property of its schema (the schema's required
// ones all present), so a renamed field fails a test, not a page.
import {api} from './api';

export interface Datasource {name: string; type: string; host: string; port: number; database: string; user: string; password_set: boolean;
  params: Record<string, string>; used_by: string[]; projects: string[]; created_at: string; updated_at: string}
export interface DatasourceRequest {type: string; host?: string; port?: number; database?: string; user?: string; password?: string;
  params?: Record<string, string>; projects?: string[]}
export interface DatasourceTest {ok: boolean; error?: string; elapsed_ms: number}
export interface AlertChannel {name: string; kind: string; url?: string; format?: string; host?: string; port?: number; tls?: string;
  username?: string; from?: string; to?: string[]; insecure_skip_verify?: boolean; command?: string; secret_set: boolean; created_at: string; updated_at: string}
export interface AlertChannelRequest {kind: string; url?: string; format?: string; host?: string; port?: number; tls?: string; username?: string;
  from?: string; to?: string[]; insecure_skip_verify?: boolean; command?: string; secret?: string}
export interface Alert {id: number; channel: string; kind: string; project?: string; workflow?: string; instance_id?: number; message: string;
  state: string; attempts: number; last_error?: string; created_at: string; sent_at?: string}
export interface TaskGroup {id: number; name: string; capacity: number; in_use: number; description: string; projects: string[]; created_at: string}
export interface CreateTaskGroupRequest {name: string; capacity: number; description?: string; projects?: string[]}
export interface ResizeTaskGroupRequest {capacity: number}
export interface DatasetProducer {workflow: string; task: string}
export interface DatasetConsumer {workflow: string; grain: string; run_grain: string; late_data: string}
export interface Dataset {name: string; producers: DatasetProducer[] | null; consumers: DatasetConsumer[] | null; partitions: number;
  last_partition?: string; last_event_at?: string}
export interface DatasetList {datasets: Dataset[] | null}
export interface DatasetEvent {id: number; dataset: string; partition: string; producer: string; task_instance_id?: number; run_id?: number;
  produced_by?: string; produced_at: string; evaluated: boolean}
export interface DatasetPartition {key: string; events: DatasetEvent[]}
export interface DatasetDetail extends Dataset {partition_list: DatasetPartition[] | null}
export interface DatasetFire {id: number; workflow: string; partition: string; event_id: number; covered_event_id: number; outcome: string;
  rerun: boolean; reason?: string; run_id?: number; fired_at: string}
export interface DatasetFireList {fires: DatasetFire[] | null}
export interface DatasetInput {dataset: string; partition: string; produced: boolean; ready_at?: string}
export interface RunDatasets {run_id: number; fire?: DatasetFire; waited_for: DatasetInput[] | null; produced: DatasetEvent[] | null}

type List<T> = {items: T[]};

// FIELDS names every field of each type, for the check against the
// document: `satisfies` makes TypeScript refuse a list that misses a field
// of its interface or names one it lacks.
const keys = <T>() => <K extends Record<keyof T, true>>(k: K & Record<Exclude<keyof K, keyof T>, never>) => Object.keys(k);
export const FIELDS: Record<string, string[]> = {
  Datasource: keys<Datasource>()({name: true, type: true, host: true, port: true, database: true, user: true, password_set: true, params: true,
    used_by: true, projects: true, created_at: true, updated_at: true}),
  DatasourceRequest: keys<DatasourceRequest>()({type: true, host: true, port: true, database: true, user: true, password: true, params: true, projects: true}),
  DatasourceTest: keys<DatasourceTest>()({ok: true, error: true, elapsed_ms: true}),
  AlertChannel: keys<AlertChannel>()({name: true, kind: true, url: true, format: true, host: true, port: true, tls: true, username: true, from: true,
    to: true, insecure_skip_verify: true, command: true, secret_set: true, created_at: true, updated_at: true}),
  AlertChannelRequest: keys<AlertChannelRequest>()({kind: true, url: true, format: true, host: true, port: true, tls: true, username: true, from: true,
    to: true, insecure_skip_verify: true, command: true, secret: true}),
  Alert: keys<Alert>()({id: true, channel: true, kind: true, project: true, workflow: true, instance_id: true, message: true, state: true,
    attempts: true, last_error: true, created_at: true, sent_at: true}),
  TaskGroup: keys<TaskGroup>()({id: true, name: true, capacity: true, in_use: true, description: true, projects: true, created_at: true}),
  CreateTaskGroupRequest: keys<CreateTaskGroupRequest>()({name: true, capacity: true, description: true, projects: true}),
  ResizeTaskGroupRequest: keys<ResizeTaskGroupRequest>()({capacity: true}),
  DatasetProducer: keys<DatasetProducer>()({workflow: true, task: true}),
  DatasetConsumer: keys<DatasetConsumer>()({workflow: true, grain: true, run_grain: true, late_data: true}),
  Dataset: keys<Dataset>()({name: true, producers: true, consumers: true, partitions: true, last_partition: true, last_event_at: true}),
  DatasetList: keys<DatasetList>()({datasets: true}),
  DatasetEvent: keys<DatasetEvent>()({id: true, dataset: true, partition: true, producer: true, task_instance_id: true, run_id: true,
    produced_by: true, produced_at: true, evaluated: true}),
  DatasetPartition: keys<DatasetPartition>()({key: true, events: true}),
  DatasetDetail: keys<DatasetDetail>()({name: true, producers: true, consumers: true, partitions: true, last_partition: true, last_event_at: true,
    partition_list: true}),
  DatasetFire: keys<DatasetFire>()({id: true, workflow: true, partition: true, event_id: true, covered_event_id: true, outcome: true, rerun: true,
    reason: true, run_id: true, fired_at: true}),
  DatasetFireList: keys<DatasetFireList>()({fires: true}),
  DatasetInput: keys<DatasetInput>()({dataset: true, partition: true, produced: true, ready_at: true}),
  RunDatasets: keys<RunDatasets>()({run_id: true, fire: true, waited_for: true, produced: true}),
};

// Types names the schemas the client uses, for ROUTES to refer to.
type Types = {Datasource: Datasource; DatasourceRequest: DatasourceRequest; DatasourceTest: DatasourceTest; AlertChannel: AlertChannel;
  AlertChannelRequest: AlertChannelRequest; Alert: Alert; TaskGroup: TaskGroup; CreateTaskGroupRequest: CreateTaskGroupRequest;
  ResizeTaskGroupRequest: ResizeTaskGroupRequest; DatasetList: DatasetList; DatasetDetail: DatasetDetail; DatasetFireList: DatasetFireList;
  RunDatasets: RunDatasets};
// TypeOf is the type a schema name in ROUTES stands for ('' none; 'List:X'
// an {items: X[]}).
type TypeOf<S> = S extends `List:${infer T extends keyof Types}` ? List<Types[T]> : S extends keyof Types ? Types[S] : null;

// ROUTES: each route the pages call, with the schemas of its request and
// answer; the types of call() follow from it, and client.test.ts checks it
// against the document.
export const ROUTES = {
  'GET /api/v1/datasources': {req: '', res: 'List:Datasource'},
  'PUT /api/v1/datasources/{name}': {req: 'DatasourceRequest', res: 'Datasource'},
  'DELETE /api/v1/datasources/{name}': {req: '', res: ''},
  'POST /api/v1/datasources/{name}/test': {req: '', res: 'DatasourceTest'},
  'GET /api/v1/alert-channels': {req: '', res: 'List:AlertChannel'},
  'PUT /api/v1/alert-channels/{name}': {req: 'AlertChannelRequest', res: 'AlertChannel'},
  'DELETE /api/v1/alert-channels/{name}': {req: '', res: ''},
  'POST /api/v1/alert-channels/{name}/test': {req: '', res: 'Alert'},
  'GET /api/v1/task-groups': {req: '', res: 'List:TaskGroup'},
  'POST /api/v1/task-groups': {req: 'CreateTaskGroupRequest', res: 'TaskGroup'},
  'PATCH /api/v1/task-groups/{name}': {req: 'ResizeTaskGroupRequest', res: 'TaskGroup'},
  'DELETE /api/v1/task-groups/{name}': {req: '', res: ''},
  'GET /api/v1/projects/{project}/datasets': {req: '', res: 'DatasetList'},
  'GET /api/v1/projects/{project}/datasets/{dataset}': {req: '', res: 'DatasetDetail'},
  'GET /api/v1/projects/{project}/workflows/{name}/dataset-fires': {req: '', res: 'DatasetFireList'},
  'GET /api/v1/instances/{id}/datasets': {req: '', res: 'RunDatasets'},
} as const satisfies Record<string, {req: '' | keyof Types; res: '' | keyof Types | `List:${keyof Types}`}>;
export type Route = keyof typeof ROUTES;
export type Req<R extends Route> = TypeOf<(typeof ROUTES)[R]['req']>;
export type Res<R extends Route> = TypeOf<(typeof ROUTES)[R]['res']>;

// pathOf fills a route's {parameters}, each escaped.
export function pathOf(route: Route, args: Record<string, string | number> = {}): string {
  return route.slice(route.indexOf(' ') + 1).replace(/\{(\w+)\}/g, (_, k: string) => {
    if (!(k in args)) throw new Error(`${route}: no value for {${k}}`);
    return encodeURIComponent(String(args[k]));
  });
}

// call sends a route's request and returns its typed answer.
export function call<R extends Route>(route: R, args: Record<string, string | number> = {},
  body?: Req<R>, signal?: AbortSignal): Promise<Res<R>> {
  const method = route.slice(0, route.indexOf(' '));
  return api(method, pathOf(route, args), {json: body ?? (method === 'GET' || method === 'DELETE' ? undefined : {}), signal});
}
