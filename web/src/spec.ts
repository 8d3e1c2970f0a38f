// The editor's model of a workflow spec: task types and their fields,
// validation per task (shown on its node before saving), and a line diff
// of two versions. Pure: unit-tested with vitest.
import type {SpecTask} from './graph';

export const TASK_TYPES = ['shell', 'python', 'http', 'sql', 'sub_workflow', 'dependent', 'conditions', 'switch'] as const;
export type TaskType = (typeof TASK_TYPES)[number];

export const TYPE_HELP: Record<TaskType, string> = {
  shell: 'a shell command on a worker',
  python: 'a Python script on a worker',
  http: 'an HTTP request, its status checked',
  sql: 'SQL on a datasource',
  sub_workflow: 'another workflow as a child instance',
  dependent: 'waits for runs of other workflows',
  conditions: 'branches on the upstreams\' outcome',
  switch: 'branches on values',
};

const NAME = /^[A-Za-z0-9_.-]{1,128}$/;
const DURATION = /^(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+$/;

export function typeOf(t: SpecTask): TaskType {
  return ((t.type as string) || 'shell') as TaskType;
}

// newTask is a task of the type with a free name and the fields its form
// starts with.
export function newTask(type: TaskType, taken: Set<string>): SpecTask {
  let i = 1;
  while (taken.has(`${type}_${i}`)) i++;
  const t: SpecTask = {name: `${type}_${i}`};
  if (type !== 'shell') t.type = type;
  switch (type) {
    case 'shell': t.command = 'echo hello'; break;
    case 'python': t.command = 'print("hello")'; break;
    case 'http': t.method = 'GET'; t.url = ''; break;
    case 'sql': t.datasource = ''; t.sql = ''; break;
    case 'sub_workflow': t.workflow = ''; break;
    case 'dependent': t.wait_for = [{workflow: '', date: 'today'}]; t.relation = 'all'; break;
    case 'conditions': t.on_success = []; t.on_failure = []; break;
    case 'switch': t.cases = [{when: '', next: []}]; t.default = []; break;
  }
  return t;
}

export type Problems = Record<string, string>; // field -> message

const str = (v: unknown) => (typeof v === 'string' ? v : '');

// validate returns the problems of each task by name (only tasks that
// have some). It checks what the form can know before the API does.
export function validate(tasks: SpecTask[]): Map<string, Problems> {
  const out = new Map<string, Problems>();
  const names = new Set(tasks.map((t) => t.name));
  const seen = new Set<string>();
  tasks.forEach((t, i) => {
    const p: Problems = {};
    const key = t.name || `#${i + 1}`;
    if (!t.name) p.name = 'name is required';
    else if (!NAME.test(t.name)) p.name = "name: 1 to 128 letters, digits, '_', '-' or '.'";
    else if (seen.has(t.name)) p.name = `name ${t.name} is used twice`;
    seen.add(t.name);
    for (const f of ['retry_interval', 'timeout']) {
      const v = str(t[f]);
      if (v && !DURATION.test(v)) p[f] = `${f} ${JSON.stringify(v)} is not a duration like 30s, 5m or 1h`;
    }
    if (t.retries !== undefined && (!Number.isInteger(t.retries) || (t.retries as number) < 0)) p.retries = 'retries must be a whole number, 0 or more';
    const ref = (f: string, list: unknown) => {
      for (const n of (Array.isArray(list) ? list : []) as string[]) if (!names.has(n)) { p[f] = `${f} names ${n}, which is not a task`; return; }
    };
    switch (typeOf(t)) {
      case 'shell': case 'python':
        if (!str(t.command).trim()) p.command = 'command is required'; break;
      case 'http': {
        const u = str(t.url).trim();
        if (!u) p.url = 'url is required';
        else if (!/^https?:\/\/\S+$/.test(u) && !u.includes('${')) p.url = `url ${JSON.stringify(u)} must start with http:// or https://`;
        const es = t.expect_status;
        if (es !== undefined && (!Array.isArray(es) || es.some((x) => !Number.isInteger(x) || x < 100 || x > 599))) p.expect_status = 'expect_status: HTTP codes 100 to 599';
        break;
      }
      case 'sql':
        if (!str(t.datasource).trim()) p.datasource = 'datasource is required';
        if (!(Array.isArray(t.sql) ? t.sql.length : str(t.sql).trim())) p.sql = 'sql is required';
        break;
      case 'sub_workflow':
        if (!str(t.workflow).trim()) p.workflow = 'workflow is required'; break;
      case 'dependent': {
        const w = t.wait_for;
        if (!Array.isArray(w) || !w.length) p.wait_for = 'wait_for needs at least one workflow';
        else if (w.some((x) => !x || !str((x as Record<string, unknown>).workflow).trim())) p.wait_for = 'every wait_for entry needs a workflow';
        break;
      }
      case 'conditions':
        ref('on_success', t.on_success); ref('on_failure', t.on_failure);
        if (!(t.depends_on || []).length) p.depends_on = 'a conditions task needs an upstream to branch on';
        break;
      case 'switch': {
        const c = t.cases;
        if (!Array.isArray(c) || !c.length) p.cases = 'switch needs at least one case';
        else for (const k of c as {when?: string; next?: string[]}[]) {
          if (!str(k.when).trim()) { p.cases = 'every case needs a when expression'; break; }
          ref('cases', k.next);
        }
        ref('default', t.default);
        break;
      }
    }
    if (Object.keys(p).length) out.set(key, p);
  });
  return out;
}

// cleanTask drops the empty optional fields a form leaves behind, so the
// saved spec is what a person would write.
export function cleanTask(t: SpecTask): SpecTask {
  const out: SpecTask = {name: t.name};
  for (const [k, v] of Object.entries(t)) {
    if (k === 'name') continue;
    if (v === '' || v === undefined || v === null) continue;
    if (Array.isArray(v) && !v.length && !['on_success', 'on_failure', 'default', 'sql'].includes(k)) continue;
    if (typeof v === 'object' && !Array.isArray(v) && !Object.keys(v as object).length) continue;
    if (k === 'retries' && v === 0) continue;
    out[k] = v;
  }
  return out;
}

export type DiffLine = {op: ' ' | '+' | '-'; text: string};

// diffLines is a line diff (longest common subsequence) of a and b.
export function diffLines(a: string, b: string): DiffLine[] {
  const x = a.split('\n'), y = b.split('\n');
  const n = x.length, m = y.length;
  const L: Uint32Array[] = Array.from({length: n + 1}, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) L[i][j] = x[i] === y[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
  const out: DiffLine[] = [];
  let i = 0, j = 0;
  while (i < n && j < m) {
    if (x[i] === y[j]) { out.push({op: ' ', text: x[i]}); i++; j++; }
    else if (L[i + 1][j] >= L[i][j + 1]) out.push({op: '-', text: x[i++]});
    else out.push({op: '+', text: y[j++]});
  }
  while (i < n) out.push({op: '-', text: x[i++]});
  while (j < m) out.push({op: '+', text: y[j++]});
  return out;
}

// graphDiff says which tasks and edges one version adds, removes or changes.
export function graphDiff(a: SpecTask[], b: SpecTask[]) {
  const A = new Map(a.map((t) => [t.name, t])), B = new Map(b.map((t) => [t.name, t]));
  const edges = (ts: SpecTask[]) => new Set(ts.flatMap((t) => (t.depends_on || []).map((d) => `${d} → ${t.name}`)));
  const ea = edges(a), eb = edges(b);
  return {
    added: b.filter((t) => !A.has(t.name)).map((t) => t.name),
    removed: a.filter((t) => !B.has(t.name)).map((t) => t.name),
    changed: b.filter((t) => A.has(t.name) && JSON.stringify(A.get(t.name)) !== JSON.stringify(t)).map((t) => t.name),
    edgesAdded: [...eb].filter((e) => !ea.has(e)),
    edgesRemoved: [...ea].filter((e) => !eb.has(e)),
  };
}
