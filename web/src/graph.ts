// Pure graph functions shared by the instance page and the editor: layout,
// cycle checks, the latest attempt per task, state counts, critical path.
// No DOM, no React: unit-tested with vitest.
import dagre from '@dagrejs/dagre';

export interface SpecTask {
  name: string;
  type?: string;
  depends_on?: string[];
  [k: string]: unknown;
}

export interface TaskAttempt {
  id: number;
  name: string;
  attempt: number;
  state: string;
  host?: string;
  pid?: number;
  exit_code?: number | null;
  start_time?: string;
  end_time?: string;
  submit_time?: string;
  created_at?: string;
  task_group?: string;
  superseded?: boolean;
  dry_run?: boolean;
  params?: Record<string, string>;
  outputs?: Record<string, string>;
  wait?: Wait | null;
  child_instance_id?: number | null;
  message?: string | null;
}

// Wait is why a task (or a pending one) is not running yet.
export interface Wait { cause: string; reason: string; upstream?: string[]; ahead?: number; retry_at?: string }

export const NODE_W = 180;
export const NODE_H = 44;

export interface Pos { x: number; y: number }

// DAGRE_LIMIT: dagre (network-simplex ranking, crossing reduction) takes
// ~0.3 s at 100 tasks and ~2 s at 800 here, growing faster than linear;
// past this many tasks a longest-path layering with two barycenter sweeps
// lays out a 5,000-task DAG in tens of milliseconds and reads as well.
export const DAGRE_LIMIT = 150;

// layout places each task (top to bottom is time: left to right, by
// dependency depth). Unknown dependencies are ignored; a cycle cannot loop.
export function layout(tasks: SpecTask[]): Map<string, Pos> {
  if (tasks.length <= DAGRE_LIMIT) return dagreLayout(tasks);
  return layeredLayout(tasks);
}

function dagreLayout(tasks: SpecTask[]): Map<string, Pos> {
  const g = new dagre.graphlib.Graph();
  g.setGraph({rankdir: 'LR', nodesep: 14, ranksep: 56, marginx: 10, marginy: 10});
  g.setDefaultEdgeLabel(() => ({}));
  const names = new Set(tasks.map((t) => t.name));
  for (const t of tasks) g.setNode(t.name, {width: NODE_W, height: NODE_H});
  for (const t of tasks) for (const d of t.depends_on || []) if (names.has(d) && d !== t.name) g.setEdge(d, t.name);
  dagre.layout(g);
  const out = new Map<string, Pos>();
  for (const t of tasks) {
    const n = g.node(t.name);
    out.set(t.name, {x: n.x - NODE_W / 2, y: n.y - NODE_H / 2});
  }
  return out;
}

// depths is each task's layer: one right of its deepest dependency.
export function depths(tasks: SpecTask[]): Map<string, number> {
  const byName = new Map(tasks.map((t) => [t.name, t]));
  const depth = new Map<string, number>();
  const onStack = new Set<string>();
  // Iterative DFS: a 5,000-deep chain must not overflow the stack.
  for (const root of tasks) {
    if (depth.has(root.name)) continue;
    const frame = (n: string): [string, number, string[]] => [n, 0, (byName.get(n)!.depends_on || []).filter((d) => byName.has(d))];
    const stack = [frame(root.name)];
    onStack.add(root.name);
    while (stack.length) {
      const top = stack[stack.length - 1];
      const deps = top[2];
      if (top[1] < deps.length) {
        const d = deps[top[1]++];
        if (!depth.has(d) && !onStack.has(d)) {
          onStack.add(d);
          stack.push(frame(d));
        }
        continue;
      }
      let m = 0;
      for (const d of deps) if (depth.has(d)) m = Math.max(m, depth.get(d)! + 1);
      depth.set(top[0], m);
      onStack.delete(top[0]);
      stack.pop();
    }
  }
  return depth;
}

function layeredLayout(tasks: SpecTask[]): Map<string, Pos> {
  const byName = new Map(tasks.map((t) => [t.name, t]));
  const depth = depths(tasks);
  const layers: string[][] = [];
  for (const t of tasks) (layers[depth.get(t.name)!] ||= []).push(t.name);
  const pos = new Map<string, number>();
  layers.forEach((l) => l.forEach((n, i) => pos.set(n, i)));
  for (let sweep = 0; sweep < 2; sweep++) {
    for (let d = 1; d < layers.length; d++) {
      const key = new Map(layers[d].map((n, i) => {
        const deps = (byName.get(n)!.depends_on || []).filter((x) => pos.has(x));
        const m = deps.length ? deps.reduce((a, x) => a + pos.get(x)!, 0) / deps.length : i;
        return [n, m * 1e6 + i] as const;
      }));
      layers[d].sort((a, b) => key.get(a)! - key.get(b)!);
      layers[d].forEach((n, i) => pos.set(n, i));
    }
  }
  // A layer taller than a screen wraps into columns so a wide fan-out stays
  // a block, not a 50,000-px line.
  const WRAP = 40;
  const out = new Map<string, Pos>();
  let x = 10;
  const tallest = Math.min(WRAP, Math.max(1, ...layers.map((l) => l.length)));
  for (const l of layers) {
    const cols = Math.ceil(l.length / WRAP);
    const rows = Math.min(WRAP, l.length);
    const off = ((tallest - rows) * (NODE_H + 14)) / 2;
    l.forEach((n, i) => {
      const c = Math.floor(i / WRAP), r = i % WRAP;
      out.set(n, {x: x + c * (NODE_W + 16), y: 10 + off + r * (NODE_H + 14)});
    });
    x += cols * (NODE_W + 16) + 56 - 16;
  }
  return out;
}

// reaches says whether to is reachable from from along depends_on edges
// (dependency -> dependent).
export function reaches(tasks: SpecTask[], from: string, to: string): boolean {
  const next = new Map<string, string[]>();
  for (const t of tasks) for (const d of t.depends_on || []) (next.get(d) || next.set(d, []).get(d)!).push(t.name);
  const seen = new Set([from]);
  const stack = [from];
  while (stack.length) {
    const n = stack.pop()!;
    if (n === to) return true;
    for (const m of next.get(n) || []) if (!seen.has(m)) { seen.add(m); stack.push(m); }
  }
  return false;
}

// edgeRefusal says why the edge source -> target (target depends on
// source) cannot be drawn, or '' when it can.
export function edgeRefusal(tasks: SpecTask[], source: string, target: string): string {
  if (source === target) return `${source} cannot depend on itself.`;
  const t = tasks.find((x) => x.name === target);
  if (t && (t.depends_on || []).includes(source)) return `${target} already depends on ${source}.`;
  if (reaches(tasks, target, source)) return `Refused: ${target} → ${source} already exists through the graph, so ${source} → ${target} would make a cycle.`;
  return '';
}

// latestAttempts maps each task name to its newest attempt.
export function latestAttempts(tasks: TaskAttempt[]): Map<string, TaskAttempt> {
  const m = new Map<string, TaskAttempt>();
  for (const t of tasks) {
    const cur = m.get(t.name);
    if (!cur || t.id > cur.id) m.set(t.name, t);
  }
  return m;
}

// stateCounts counts the tasks of the spec by their latest state
// ('' for not started).
export function stateCounts(names: string[], latest: Map<string, TaskAttempt>): Map<string, number> {
  const c = new Map<string, number>();
  for (const n of names) {
    const s = latest.get(n)?.state || '';
    c.set(s, (c.get(s) || 0) + 1);
  }
  return c;
}

// readCounts are an instance read's counts per state for a graph of n
// tasks: the tasks without a row yet are "not started" ('').
export function readCounts(n: number, byState: Record<string, number>): Map<string, number> {
  const c = new Map<string, number>();
  let rows = 0;
  for (const [s, k] of Object.entries(byState)) { if (k > 0) { c.set(s, k); rows += k; } }
  if (n > rows) c.set('', n - rows);
  return c;
}

const ms = (iso?: string) => (iso ? new Date(iso).getTime() : NaN);

// criticalPath is the chain of tasks, along dependencies, whose durations
// (latest attempt, start to end or now) add up the most: the tasks that
// decided how long the run took.
export function criticalPath(tasks: SpecTask[], latest: Map<string, TaskAttempt>, now = Date.now()): string[] {
  const dur = (n: string) => {
    const t = latest.get(n);
    if (!t || !t.start_time) return 0;
    const e = t.end_time ? ms(t.end_time) : now;
    return Math.max(0, e - ms(t.start_time));
  };
  const depth = depths(tasks);
  const order = [...tasks].sort((a, b) => depth.get(a.name)! - depth.get(b.name)!);
  const best = new Map<string, number>();
  const prev = new Map<string, string>();
  const names = new Set(tasks.map((t) => t.name));
  for (const t of order) {
    let b = 0, p = '';
    for (const d of t.depends_on || []) {
      if (!names.has(d)) continue;
      const v = best.get(d) ?? 0;
      if (v > b || !p) { b = v; p = d; }
    }
    best.set(t.name, b + dur(t.name));
    if (p) prev.set(t.name, p);
  }
  let end = '', max = -1;
  for (const [n, v] of best) if (v > max) { max = v; end = n; }
  if (!end || max <= 0) return [];
  const path = [end];
  while (prev.has(path[0])) path.unshift(prev.get(path[0])!);
  return path;
}

// matches is a case-insensitive name search.
export function matches(name: string, q: string): boolean {
  return !q || name.toLowerCase().includes(q.toLowerCase());
}

// prefixOf is a task's family: its name without a trailing number
// ("part_17" and "part-3" are "part"); a name without one is its own.
export function prefixOf(name: string): string {
  const m = /^(.*?)[._-]?\d+$/.exec(name);
  return m && m[1] ? m[1] : name;
}

export interface Collapsed {
  tasks: SpecTask[];               // one per group or lone task
  members: Map<string, string[]>;  // group node name -> its tasks (folded groups)
  family: Map<string, string>;     // a task of a family -> its group's name, folded or open
}

// collapse folds each family of at least min tasks into one node named
// "PREFIX*", with the dependencies between families. The groups named in
// open stay unfolded: their tasks are nodes of their own (the editor
// expands one family at a time).
export function collapse(tasks: SpecTask[], min = 3, open: ReadonlySet<string> = new Set()): Collapsed {
  const fam = new Map<string, string[]>();
  for (const t of tasks) {
    const p = prefixOf(t.name);
    (fam.get(p) || fam.set(p, []).get(p)!).push(t.name);
  }
  const groupOf = new Map<string, string>();
  const members = new Map<string, string[]>();
  const family = new Map<string, string>();
  for (const [p, ns] of fam) {
    if (ns.length >= min) {
      const g = p + '*';
      for (const n of ns) family.set(n, g);
      if (open.has(g)) { for (const n of ns) groupOf.set(n, n); continue; }
      members.set(g, ns);
      for (const n of ns) groupOf.set(n, g);
    } else for (const n of ns) groupOf.set(n, n);
  }
  const deps = new Map<string, Set<string>>();
  const order: string[] = [];
  for (const t of tasks) {
    const g = groupOf.get(t.name)!;
    if (!deps.has(g)) { deps.set(g, new Set()); order.push(g); }
    for (const d of t.depends_on || []) {
      const dg = groupOf.get(d);
      if (dg && dg !== g) deps.get(g)!.add(dg);
    }
  }
  return {tasks: order.map((name) => ({name, depends_on: [...deps.get(name)!]})), members, family};
}

// STATE_RANK orders states by how much they need a look: a group shows
// its most urgent member state.
const STATE_RANK = ['failed', 'killed', 'need_fault_tolerance', 'running', 'dispatched', 'submitted', 'delayed', 'paused',
  'forced_success', 'succeeded', 'skipped', ''];

export function worstState(states: string[]): string {
  let best = STATE_RANK.length;
  for (const s of states) {
    const i = STATE_RANK.indexOf(s);
    if (i >= 0 && i < best) best = i;
  }
  return best < STATE_RANK.length ? STATE_RANK[best] : '';
}

// step is where a key moves the keyboard's cursor in a laid-out graph:
// ArrowRight to the nearest (by height) task that depends on from,
// ArrowLeft to the nearest one from depends on, ArrowUp and ArrowDown to
// the next task above or below in the same column; Home to the first task.
// No cursor yet: any arrow starts at the first task. Nowhere to go: from.
export function step(tasks: SpecTask[], pos: Map<string, Pos>, from: string, key: string): string {
  if (!tasks.length) return '';
  const first = () => [...pos.entries()].sort(([, a], [, b]) => a.x - b.x || a.y - b.y)[0]?.[0] ?? tasks[0].name;
  const at = pos.get(from);
  if (!at || key === 'Home') return first();
  const nearest = (names: string[]) => names.filter((n) => pos.has(n))
    .sort((a, b) => Math.abs(pos.get(a)!.y - at.y) - Math.abs(pos.get(b)!.y - at.y) || pos.get(a)!.y - pos.get(b)!.y)[0] ?? from;
  switch (key) {
    case 'ArrowRight':
      return nearest(downstreamOf(tasks, from));
    case 'ArrowLeft':
      return nearest(tasks.find((t) => t.name === from)?.depends_on || []);
    case 'ArrowUp':
    case 'ArrowDown': {
      const col = [...pos.entries()].filter(([, p]) => p.x === at.x).sort(([, a], [, b]) => a.y - b.y).map(([n]) => n);
      const i = col.indexOf(from) + (key === 'ArrowUp' ? -1 : 1);
      return i >= 0 && i < col.length ? col[i] : from;
    }
  }
  return from;
}

// downstreamOf is the tasks that depend on name directly.
export function downstreamOf(tasks: SpecTask[], name: string): string[] {
  return tasks.filter((t) => (t.depends_on || []).includes(name)).map((t) => t.name);
}

// nearKey names the part of a big graph's plane around the screen (a
// screen more on each side) for a viewport (transform [x, y, zoom] of a
// width x height box), in half-screen steps: it changes only when a pan
// crosses a step. Only the nodes and edges in it are given to React Flow:
// it adopts every node it is given (measures, indexes, checks it against
// the viewport on each pan), and 5,000 of them took seconds to show the
// whole graph.
export function nearKey([x, y, z]: readonly number[], width: number, height: number): string {
  const w = width / z, h = height / z;
  return [Math.floor(-x / z / (w / 2)), Math.floor(-y / z / (h / 2)), Math.round(w), Math.round(h)].join(',');
}

// nearBox is the plane nearKey's key stands for; inBox says whether a
// node placed at p is (partly) in it.
export function nearBox(key: string) {
  const [i, j, w, h] = key.split(',').map(Number);
  const x0 = (i - 2) * w / 2, y0 = (j - 2) * h / 2;
  return {x0, y0, x1: x0 + 3 * w, y1: y0 + 3 * h};
}
export const inBox = (b: ReturnType<typeof nearBox>, p: Pos | undefined) =>
  !!p && p.x + NODE_W >= b.x0 && p.x <= b.x1 && p.y + NODE_H >= b.y0 && p.y <= b.y1;
