// Live updates of the instance page from the event stream
// (GET /api/v1/events?instance=ID): pure functions that apply task and
// instance events to what the page holds. No DOM, no React: unit-tested.
import type {TaskAttempt} from './graph';
import {taskFinished, workflowFinished} from './states';

// StreamEvent is one event's data (its seq is id).
export interface StreamEvent {
  id: number;
  time: string;
  kind: string;
  instance_id: number;
  task_instance_id?: number;
  task_name?: string;
  state: string;
  attempt: number;
}

export interface LiveDetail {
  state: string;
  run_times: number;
  end_time?: string;
  tasks: TaskAttempt[];
}

export interface Applied<D extends LiveDetail> {
  detail: D;
  // rows changed or added, whose other fields (host, exit code, outputs)
  // the page reads again
  dirty: number[];
  // the instance itself changed (its head, history, outputs may have)
  instance: boolean;
}

// applyEvents returns d with evs applied in order: a known attempt takes
// the event's state and attempt (its start or end time the event's time
// when it had none); an attempt not seen yet is added as a row and the
// earlier attempts of its task are superseded; an instance event sets the
// instance's state and run count. d itself is not changed.
export function applyEvents<D extends LiveDetail>(d: D, evs: StreamEvent[]): Applied<D> {
  let tasks: TaskAttempt[] | null = null;
  let index: Map<number, number> | null = null;
  const dirty = new Set<number>();
  let out: D = d, instance = false;
  for (const e of evs) {
    if (e.kind === 'instance') {
      instance = true;
      if (out === d) out = {...d};
      out.state = e.state;
      out.run_times = e.attempt || out.run_times;
      if (workflowFinished(e.state) && !out.end_time) out.end_time = e.time;
      continue;
    }
    if (e.kind !== 'task' || !e.task_instance_id) continue;
    if (!tasks) {
      tasks = d.tasks.slice();
      index = new Map(tasks.map((t, i) => [t.id, i]));
    }
    const id = e.task_instance_id;
    const i = index!.get(id);
    if (i === undefined) {
      for (let j = 0; j < tasks.length; j++) {
        if (tasks[j].name === e.task_name && !tasks[j].superseded) tasks[j] = {...tasks[j], superseded: true};
      }
      index!.set(id, tasks.length);
      tasks.push(withState({id, name: e.task_name || '', attempt: e.attempt, state: ''}, e));
    } else {
      tasks[i] = withState(tasks[i], e);
    }
    dirty.add(id);
  }
  if (tasks) {
    if (out === d) out = {...d};
    out.tasks = tasks;
  }
  return {detail: out, dirty: [...dirty], instance};
}

function withState(t: TaskAttempt, e: StreamEvent): TaskAttempt {
  const n: TaskAttempt = {...t, state: e.state, attempt: e.attempt || t.attempt};
  if (e.state === 'running' && !n.start_time) n.start_time = e.time;
  if (taskFinished(e.state)) {
    if (!n.end_time) n.end_time = e.time;
    if (!n.start_time) n.start_time = e.time;
    n.wait = null;
  }
  if (e.state === 'running') n.wait = null;
  return n;
}

// mergeRows puts fresh rows (read again by id) in place of the page's. A
// row in keep changed by an event since it was asked for: it keeps the
// state the event gave it (it is read again later).
export function mergeRows<D extends LiveDetail>(d: D, rows: TaskAttempt[], keep?: Set<number>): D {
  if (!rows.length) return d;
  const cur = new Map(d.tasks.map((t) => [t.id, t]));
  const fresh = new Map(rows.map((r) => {
    const c = cur.get(r.id);
    return [r.id, keep?.has(r.id) && c ? {...r, state: c.state, attempt: c.attempt, end_time: c.end_time || r.end_time} : r];
  }));
  const seen = new Set<number>();
  const tasks = d.tasks.map((t) => {
    const r = fresh.get(t.id);
    if (!r) return t;
    seen.add(t.id);
    return r;
  });
  for (const r of fresh.values()) if (!seen.has(r.id)) tasks.push(r);
  tasks.sort((a, b) => a.id - b.id);
  return {...d, tasks};
}
