// Instance: one run. The DAG fitted to the screen (state by colour, symbol
// and text, with a legend and counts), search, the log and values of the
// chosen task beside the graph, a Gantt of every attempt with the critical
// path, the task list (windowed, filtered), outputs, history and actions.
import {memo, useCallback, useEffect, useLayoutEffect, useMemo, useRef, useState} from 'react';
import {flushSync} from 'react-dom';
import {api, describe, get, user} from './api';
import {confirmDialog, flash} from './notify';
import {Dag, useFold, type NodeInfo} from './Dag';
import {Gantt} from './Gantt';
import {LogViewer} from './LogViewer';
import {criticalPath, downstreamOf, readCounts, latestAttempts, matches, stateCounts, worstState, type SpecTask, type TaskAttempt, type Wait} from './graph';
import {STATE_SYMBOL, TASK_STATES, stateClass, stateLabel, taskFinished, workflowFinished} from './states';
import {guessed, untilText, type Forecast} from './forecast';
import {applyEvents, mergeRows, type StreamEvent} from './live';
import {Badge, Duration, Time, Why, duration, enc} from './ui';
import {perf} from './perf';
import {PlanPanel, type PlanTarget} from './PlanPanel';
import {RunDatasets} from './DatasetsPage';

const INSTANCE_ACTIONS: [string, string, string, string[]][] = [
  ['stop', 'Stop', 'Kill the running tasks and start nothing new; the instance ends stopped.', ['running', 'submitted']],
  ['pause', 'Pause', 'Let the running tasks finish and start nothing new; the instance ends paused.', ['running', 'submitted']],
  ['resume', 'Resume', 'Continue the paused or stopped instance in place.', ['paused', 'stopped']],
  ['rerun', 'Rerun', 'Run the whole instance again in place: every task gets a new attempt.', ['succeeded', 'failed', 'stopped']],
  ['recover_failed', 'Recover failed', 'Rerun only the failed and killed tasks and the tasks downstream of them.',
    ['succeeded', 'failed', 'stopped', 'paused']],
];

type TaskAction = [string, string, (t: TaskAttempt) => boolean, (t: TaskAttempt) => string];
const TASK_ACTIONS: TaskAction[] = [
  ['kill', 'Kill', (t) => ['submitted', 'dispatched', 'running', 'delayed'].includes(t.state),
    (t) => `Kill task ${t.name} (attempt ${t.attempt})? Its instance fails unless the task is retried.`],
  ['force_success', 'Force success', (t) => ['failed', 'killed'].includes(t.state),
    (t) => `Count task ${t.name} (attempt ${t.attempt}, ${t.state}) as forced_success, so the tasks after it may run?`],
  ['force_start', 'Force start', (t) => t.state === 'submitted' && !!t.task_group,
    (t) => `Start task ${t.name} once without waiting for a slot in task group ${t.task_group}?`],
];

export interface Detail {
  id: number; project: string; workflow: string; version: number; state: string; reason?: string;
  git_commit?: string; latest_version?: number;
  command_type: string; schedule_id?: number; backfill_id?: number; schedule_time?: string; timezone?: string;
  priority: string; worker_group: string; params?: Record<string, string>; secret_params?: string[]; start_nodes?: string[]; scope?: string;
  dry_run?: boolean; run_times: number; host: string; created_at?: string; start_time?: string; end_time?: string;
  tasks: TaskAttempt[]; outputs?: {name: string; value: string; task: string; task_instance_id: number}[];
  history: {at: string; action: string; by: string; task_instance_id?: number; detail: string}[];
  tasks_total?: number;
  task_counts?: Record<string, number>; // per state, over every row (not only the page's)
  pending?: {name: string; wait: Wait}[];
  pending_total?: number;
  parent?: {instance_id: number; task_instance_id?: number} | null;
  event_seq?: number; // the newest event the read reflects
}

// inScope is the set of task names a run with start nodes covers (null: all).
function inScope(specTasks: SpecTask[], startNodes?: string[], scope?: string): Set<string> | null {
  if (!startNodes || !startNodes.length) return null;
  const set = new Set(startNodes);
  const deps = new Map(specTasks.map((t) => [t.name, t.depends_on || []]));
  const next = new Map<string, string[]>(specTasks.map((t) => [t.name, []]));
  for (const t of specTasks) for (const d of t.depends_on || []) next.get(d)?.push(t.name);
  const walk = scope === 'upstream' ? deps : scope === 'downstream' ? next : null;
  if (walk) {
    const stack = [...set];
    while (stack.length) for (const n of walk.get(stack.pop()!) || []) if (!set.has(n)) { set.add(n); stack.push(n); }
  }
  return set;
}

// fetchDetail reads the instance (with limit, its first tasks only); when
// the API pages the tasks (tasks_total beyond what came), it reads the
// rest too, unless limit was given.
async function fetchDetail(id: number, signal: AbortSignal, limit = 0): Promise<Detail> {
  // The first page paints states only: its waits come by the next read.
  const w = limit ? `&tasks_limit=${limit}&waits=false` : '';
  const d: Detail = await get(`/api/v1/instances/${id}?pending_limit=${PENDING_SHOWN}${w}`, {signal});
  d.tasks = d.tasks || [];
  d.history = d.history || [];
  if (limit) return d;
  let guard = 0;
  while (d.tasks_total && d.tasks.length < d.tasks_total && guard++ < 100) {
    const more: Detail = await get(`/api/v1/instances/${id}?tasks_offset=${d.tasks.length}&tasks_limit=1000&pending_limit=0`, {signal});
    if (!more.tasks || !more.tasks.length) break;
    d.tasks = d.tasks.concat(more.tasks);
  }
  return d;
}

const REFRESH_MS = 2000; // polling, when the event stream cannot be opened
const SAFETY_MS = 30000; // the stream's safety read of the whole instance
const ROWS_MS = 1000;    // rows events changed are read again at most this often
const FEW_ROWS = 20;      // rows events changed: up to this many read one by one, else as a page
const CLOCK_MS = 5000;   // running tasks' durations move on
const FIRST_PAGE = 100;  // the tasks the first read asks for
const REST_PAGE = 1000;  // and each read after it
const REASON_SHOWN = 300;
const WAITS_UP_TO = 2000; // the pages after the first carry waits up to this many tasks
const PENDING_SHOWN = 50; // the tasks not started yet listed (a run being made has thousands)
const FORECAST_MS = 10000;    // a running instance's forecast is read again this often
const FORECAST_MIN_MS = 2000; // and when a task ends, but not sooner than this after the last

// useForecast reads the running instance's forecast (forecast=true, with
// no tasks: it reads every task and the workflow's history, so it is asked
// for every FORECAST_MS and when a task ends, not on every live update);
// null while the instance is not running or the API has none.
function useForecast(id: number, running: boolean, ended: number): Forecast | null {
  const [fc, setFc] = useState<Forecast | null>(null);
  const poke = useRef<() => void>(() => {});
  useEffect(() => {
    setFc(null);
    if (!running) return;
    const ctrl = new AbortController();
    let timer = 0, last = 0, busy = false, again = false, alive = true;
    async function ask() {
      clearTimeout(timer);
      if (!alive) return;
      if (busy) { again = true; return; }
      if (last && document.hidden) { timer = window.setTimeout(ask, FORECAST_MS); return; } // out of view: the first read only
      busy = true;
      last = Date.now();
      try {
        const r = await get(`/api/v1/instances/${id}?tasks_limit=0&pending_limit=0&waits=false&forecast=true`, {signal: ctrl.signal});
        if (alive) setFc(r.forecast && !workflowFinished(r.state) ? r.forecast : null);
      } catch (e: any) {
        // aborted, or a failed read: the last forecast stays until the
        // next; an instance gone is asked for no more
        if (e?.status === 404) { alive = false; setFc(null); }
      } finally {
        busy = false;
      }
      if (!alive) return;
      timer = window.setTimeout(ask, again ? Math.max(0, last + FORECAST_MIN_MS - Date.now()) : FORECAST_MS);
      again = false;
    }
    poke.current = () => {
      if (!alive) return;
      if (busy) { again = true; return; }
      clearTimeout(timer);
      timer = window.setTimeout(ask, Math.max(0, last + FORECAST_MIN_MS - Date.now()));
    };
    ask();
    return () => { alive = false; ctrl.abort(); clearTimeout(timer); poke.current = () => {}; };
  }, [id, running]);
  const seen = useRef(ended);
  useEffect(() => {
    if (ended > seen.current) poke.current();
    seen.current = ended;
  }, [ended]);
  return running ? fc : null;
}

export function InstancePage({id, task = ''}: {id: number; task?: string}) {
  const [detail, setDetail] = useState<Detail | null>(null);
  const [spec, setSpec] = useState<{tasks: SpecTask[]} | Error | null>(null);
  const [missing, setMissing] = useState('');
  const [selected, setSelected] = useState('');
  const [panel, setPanel] = useState<'log' | 'values'>('log');
  const [logTask, setLogTask] = useState<TaskAttempt | null>(null);
  const [planning, setPlanning] = useState<{action: string; label: string; target?: PlanTarget; text?: string} | null>(null);
  const [search, setSearch] = useState('');
  const [view, setView] = useState<'graph' | 'gantt'>('graph');
  const [version, setVersion] = useState(0);
  const [useLatest, setUseLatest] = useState(false); // rerun or recover under the latest version
  const keepUntil = useRef(0);
  const wake = useRef<() => void>(() => {});
  const detailRef = useRef<Detail | null>(null);
  const changedRef = useRef<Set<string> | null>(null); // the tasks the last update changed (null: any)
  // drawn resolves when the DAG is first fitted (or there is none to draw).
  const drawnDone = useRef<() => void>(() => {});
  const drawn = useRef(new Promise<void>((res) => { drawnDone.current = res; }));

  useEffect(() => {
    const ctrl = new AbortController();
    let timer = 0, alive = true, gone = false, running = false, specDone: unknown = null;
    // The stream: while it is open the page reads no whole instance, only
    // the rows events changed (and a slow safety read).
    let es: EventSource | null = null, live = false;
    let queue: StreamEvent[] = [], since: StreamEvent[] | null = null, frame = 0;
    let touched: Set<number> | null = null;
    let dirty = new Set<number>(), instGen = 0, refreshTimer = 0, refreshing = false;

    function show(d: Detail, names: Set<string> | null = null, kind = 'read') {
      changedRef.current = names;
      const t0 = performance.now();
      detailRef.current = d;
      flushSync(() => { setDetail(d); setVersion((v) => v + 1); });
      perf.update(performance.now() - t0, d.tasks.length, kind);
      setLogTask((lt) => (lt ? d.tasks.find((t) => t.id === lt.id) || lt : lt));
    }
    function failed(e: any) {
      if (!alive || e.name === 'AbortError') return;
      if (e.status === 404) { gone = true; close(); setMissing(describe(e)); return; } // not there: asked no more
      if (e.status === 401) return; // the login form shows; logging in opens the page again
      (flash as any)(describe(e), 'error', 'instance-poll');
    }

    // tick reads the whole instance: the first time, when polling, and as
    // the stream's slow safety read.
    async function tick() {
      clearTimeout(timer);
      if (!alive || gone || running) return;
      const cur = detailRef.current;
      if (cur && workflowFinished(cur.state) && Date.now() > keepUntil.current) {
        if (live) timer = window.setTimeout(tick, SAFETY_MS);
        return;
      }
      running = true;
      if (live) since = [];
      try {
        perf.mark('instance asked');
        // The first read asks for a page of tasks: the graph (from the
        // spec) is drawn and fitted while the rest come.
        const first = !detailRef.current;
        let d = await fetchDetail(id, ctrl.signal, first ? FIRST_PAGE : 0);
        perf.mark('instance read');
        if (!alive) return;
        if (!specDone || (specDone instanceof Error && (specDone as any).status !== 404)) {
          try {
            specDone = (await get(`/api/v1/projects/${enc(d.project)}/workflows/${enc(d.workflow)}?version=${d.version}`,
              {signal: ctrl.signal})).spec;
          } catch (e: any) {
            if (e.name === 'AbortError') throw e;
            specDone = e;
          }
          setSpec(specDone as any);
        }
        perf.mark('spec read');
        // What came on the stream while reading and is newer than the
        // read (after the event seq it reflects) goes on top of it.
        const newer = (since || []).filter((e) => !(e.id <= (d.event_seq ?? -1)));
        if (newer.length) {
          const r = applyEvents(d, newer);
          d = r.detail;
          for (const x of r.dirty) dirty.add(x);
          if (r.dirty.length) later();
        }
        since = null;
        queue = [];
        show(d);
        perf.mark('first render');
        if (first) stream(d.event_seq);
        if (first && !workflowFinished(d.state)) { for (const t of d.tasks) dirty.add(t.id); later(0); }
        if (first && d.tasks_total && d.tasks.length < d.tasks_total) rest(d.tasks.length, d.tasks_total);
      } catch (e: any) {
        failed(e);
      } finally {
        running = false;
        since = null;
      }
      if (alive && !gone) timer = window.setTimeout(tick, live ? SAFETY_MS : REFRESH_MS);
    }

    // rest reads the tasks after the first page, a few pages at once, and
    // puts each in place (a row an event changed since keeps its state).
    async function rest(from: number, total: number) {
      touched = new Set();
      // Each page's waits read every task again: a big instance's pages
      // come without (a row's wait shows once an event re-reads it).
      const bare = total > WAITS_UP_TO ? '&waits=false' : '';
      const offsets: number[] = [];
      for (let o = from; o < total; o += REST_PAGE) offsets.push(o);
      let rows: TaskAttempt[] = [];
      const one = async () => {
        for (let o = offsets.shift(); o !== undefined && alive; o = offsets.shift()) {
          const p: Detail = await get(`/api/v1/instances/${id}?tasks_offset=${o}&tasks_limit=${REST_PAGE}&pending_limit=0${bare}`, {signal: ctrl.signal});
          if (p.tasks) rows = rows.concat(p.tasks);
        }
      };
      try {
        // All at once, once the graph is fitted: one render, not one per
        // page, and none while React Flow mounts.
        await Promise.all([one(), one(), Promise.race([drawn.current, new Promise((res) => setTimeout(res, 3000))])]);
        if (alive) show(mergeRows(detailRef.current!, rows, touched!));
      } catch (e: any) {
        failed(e);
      } finally {
        touched = null;
      }
    }

    // flush applies the events that came since the last frame.
    function flush() {
      frame = 0;
      const cur = detailRef.current;
      if (!alive || !cur || running || !queue.length) return;
      const evs = queue;
      queue = [];
      const r = applyEvents(cur, evs);
      if (r.instance) instGen++;
      for (const x of r.dirty) dirty.add(x);
      const names = new Set<string>();
      for (const e of evs) if (e.kind === 'task' && e.task_name) names.add(e.task_name);
      if (r.detail !== cur) show(r.detail, names, 'event');
      if (r.dirty.length || r.instance) later();
    }
    function later(ms = ROWS_MS) {
      if (!refreshTimer && !refreshing) refreshTimer = window.setTimeout(refresh, ms);
    }
    // refresh reads again what events changed: those rows (one by one when
    // few, else the page of rows they span) and the instance's head.
    async function refresh() {
      refreshTimer = 0;
      if (!alive || gone) return;
      if (running) { later(); return; }
      refreshing = true;
      const ids = [...dirty];
      dirty = new Set();
      const gen = instGen;
      try {
        const cur = detailRef.current!;
        let rows: TaskAttempt[] = [];
        let head: Detail | null = null;
        if (ids.length <= FEW_ROWS) {
          const got = await Promise.all(ids.map((x) => get(`/api/v1/task-instances/${x}`, {signal: ctrl.signal}).catch((e: any) => {
            if (e.name === 'AbortError' || e.status !== 404) throw e;
            return null;
          })));
          rows = got.filter(Boolean);
          const last = Math.max(0, cur.tasks.length - 1);
          head = await get(`/api/v1/instances/${id}?tasks_limit=1&tasks_offset=${last}&pending_limit=${PENDING_SHOWN}`, {signal: ctrl.signal});
          rows = rows.concat(head!.tasks || []);
        } else {
          const at = new Map(cur.tasks.map((t, i) => [t.id, i]));
          const idx = ids.map((x) => at.get(x) ?? cur.tasks.length);
          let lo = Math.min(...idx);
          const hi = Math.max(...idx);
          while (lo <= hi) {
            const n = Math.min(hi - lo + 1, 1000);
            head = await get(`/api/v1/instances/${id}?tasks_limit=${n}&tasks_offset=${lo}&pending_limit=${PENDING_SHOWN}`, {signal: ctrl.signal});
            const got = head!.tasks || [];
            rows = rows.concat(got);
            if (got.length < n) break;
            lo += n;
          }
        }
        if (!alive) return;
        const now = detailRef.current!;
        let d = mergeRows(now, rows, dirty);
        if (head) {
          const {tasks: _t, ...h} = head;
          d = {...d, ...h, history: h.history || [], tasks: d.tasks};
          if (instGen !== gen) d = {...d, state: now.state, run_times: now.run_times, end_time: now.end_time};
        }
        show(d, new Set(rows.map((r) => r.name)));
        // Rows made without a task event each (a dry run records its tasks
        // in bulk) are known only by the head's count: read them all.
        if (d.tasks_total && d.tasks.length < d.tasks_total && !touched) rest(0, d.tasks_total);
      } catch (e: any) {
        failed(e);
        for (const x of ids) dirty.add(x);
      } finally {
        refreshing = false;
      }
      if (dirty.size) later();
    }

    function onEvent(m: MessageEvent) {
      let e: StreamEvent;
      try { e = JSON.parse(m.data); } catch { return; }
      if (since) since.push(e);
      if (touched && e.task_instance_id) touched.add(e.task_instance_id);
      queue.push(e);
      if (!frame) frame = document.hidden ? window.setTimeout(flush, 250) : requestAnimationFrame(flush);
    }
    function close() {
      if (es) { es.close(); es = null; }
      live = false;
    }
    // The instance is read at once, and the stream opened once the read
    // says which event it reflects (event_seq): the stream starts after
    // it, so nothing in between is missed and the first paint waits for no
    // stream. Without a stream the page polls as before.
    function stream(seq?: number) {
      if (typeof EventSource === 'undefined' || es || gone || !alive) return;
      let opened = false;
      // An API without event_seq: the stream starts at its newest event
      // and the instance is read again once it is open.
      const after = seq === undefined ? '' : `&after=${seq}`;
      es = new EventSource(`/api/v1/events?instance=${id}${after}`);
      es.onopen = () => {
        live = true;
        const again = !opened && !after;
        opened = true;
        // Open: the whole instance is read only as the slow safety net.
        // Reopened it resumes from Last-Event-ID, or from after.
        clearTimeout(timer);
        if (again) { tick(); return; }
        if (!running) timer = window.setTimeout(tick, SAFETY_MS);
      };
      es.onerror = () => {
        if (!es || es.readyState !== EventSource.CLOSED) return; // reconnecting by itself
        close();
        timer = window.setTimeout(tick, opened ? 0 : REFRESH_MS); // poll
      };
      es.addEventListener('task', onEvent as EventListener);
      es.addEventListener('instance', onEvent as EventListener);
    }
    function open() { tick(); }
    // The durations of running tasks count on between events.
    const clock = window.setInterval(() => {
      const cur = detailRef.current;
      if (!live || !cur || workflowFinished(cur.state) || document.hidden) return;
      const on = new Set(cur.tasks.filter((t) => t.start_time && !t.end_time).map((t) => t.name));
      if (on.size) show(cur, on, 'clock');
    }, CLOCK_MS);
    wake.current = () => { if (live) later(); else tick(); };
    // Back in view: the head (history, waits) is read again; the stream
    // brought the rest.
    const vis = () => { if (document.visibilityState === 'visible') wake.current(); };
    document.addEventListener('visibilitychange', vis);
    open();
    return () => {
      alive = false; ctrl.abort(); clearTimeout(timer); clearTimeout(refreshTimer); clearInterval(clock); close();
      if (frame) { cancelAnimationFrame(frame); clearTimeout(frame); }
      document.removeEventListener('visibilitychange', vis);
    };
  }, [id]);

  const latest = useMemo(() => latestAttempts(detail?.tasks || []), [detail]);
  // The tasks whose latest attempt has ended: one more asks for the forecast again.
  const endedNames = useMemo(() => new Set([...latest.values()].filter((t) => taskFinished(t.state)).map((t) => t.name)), [latest]);
  const forecast = useForecast(id, !!detail && !workflowFinished(detail.state), endedNames.size);
  // Once a projection was shown its row stays (empty when the run ends):
  // the page below must not move under a pointer as the run finishes.
  const projected = useRef(false);
  if (forecast) projected.current = true;
  const waited = useRef(false); // likewise the tasks waiting to start
  if (detail?.pending?.length) waited.current = true;
  const specTasks: SpecTask[] = useMemo(() => {
    if (spec && !(spec instanceof Error)) return spec.tasks || [];
    return [...latest.keys()].map((name) => ({name}));
  }, [spec, latest]);
  const scope = useMemo(() => (spec && !(spec instanceof Error) && detail ? inScope(specTasks, detail.start_nodes, detail.scope) : null),
    [spec, specTasks, detail?.start_nodes, detail?.scope]); // eslint-disable-line react-hooks/exhaustive-deps
  const names = useMemo(() => specTasks.map((t) => t.name), [specTasks]);
  // Until every page of tasks has come, the counts are the read's own
  // (task_counts, over every row): the first paint of a finished run says
  // what it is, not "not started" for the tasks still being read.
  const partial = !!detail && !!detail.tasks_total && detail.tasks.length < detail.tasks_total;
  const counts = useMemo(() => (partial && detail?.task_counts ? readCounts(names.length, detail.task_counts) : stateCounts(names, latest)),
    [names, latest, partial, detail?.task_counts]); // eslint-disable-line react-hooks/exhaustive-deps
  // The same path keeps the same Set, so the graph's edges are not redrawn
  // on every update.
  const criticalKey = useMemo(() => (view === 'gantt' || detail?.end_time ? criticalPath(specTasks, latest).join('\n') : ''),
    [specTasks, latest, view, detail?.end_time]);
  const critical = useMemo(() => new Set(criticalKey ? criticalKey.split('\n') : []), [criticalKey]);

  const info = useCallback((name: string): NodeInfo => {
    const t = latest.get(name);
    if (!t && partial) return {state: '', label: 'loading…', title: `${name}: its row is being read`};
    if (!t) {
      const out = scope && !scope.has(name);
      return {state: out ? 'skipped' : '', label: out ? 'not in this run' : 'not started',
        title: `${name}: ${out ? 'not in this run (start nodes)' : 'not started yet'}`};
    }
    const d = t.start_time ? ' · ' + duration(t.start_time, t.end_time) : '';
    return {state: t.state, label: `${stateLabel(t.state)}${t.attempt > 1 ? ' · #' + t.attempt : ''}${d}`,
      title: `${name}: ${t.state}, attempt ${t.attempt}, task instance ${t.id}${t.host ? ' on ' + t.host : ''}`};
  }, [latest, scope, partial]);

  // Collapse by prefix: each family of tasks (part_1, part_2, …) one node.
  const [fold, setFolded] = useFold(specTasks);
  const dagTasks = fold ? fold.tasks : specTasks;
  const dagInfo = useCallback((name: string): NodeInfo => {
    const ms = fold?.members.get(name);
    if (!ms) return info(name);
    const c = new Map<string, number>();
    for (const m of ms) { const s = info(m).state; c.set(s, (c.get(s) || 0) + 1); }
    const parts = TASK_STATES.filter((s) => c.get(s)).map((s) => `${c.get(s)}${STATE_SYMBOL[s]}`);
    return {state: worstState([...c.keys()]), label: `${ms.length} tasks · ${parts.join(' ')}`,
      title: `${name}: ${ms.length} tasks, ${TASK_STATES.filter((s) => c.get(s)).map((s) => `${c.get(s)} ${stateLabel(s)}`).join(', ')}; click to expand`};
  }, [fold, info]);
  function select(name: string) {
    if (fold?.members.has(name)) {
      setFolded(false);
      setSearch(name.replace(/\*$/, ''));
      return;
    }
    open(name);
  }

  // ?task=NAME (the task list's log link): its log, once its row is read.
  const opened = useRef('');
  useEffect(() => {
    if (!task || opened.current === task || !latest.has(task)) return;
    opened.current = task;
    setSelected(task); setLogTask(latest.get(task)!); setPanel('log');
  }, [task, latest]);

  function open(name: string, what: 'log' | 'values' = 'log') {
    setSelected(name);
    const t = latest.get(name);
    if (t) { setLogTask(t); setPanel(what); } else if (partial) flash(`Task ${name}: its row is still being read; try again in a moment.`, 'info');
    else flash(`Task ${name} has not started in this run, so it has no log.`, 'info');
  }
  function openAttempt(t: TaskAttempt, what: 'log' | 'values') {
    setSelected(t.name); setLogTask(t); setPanel(what);
  }

  async function act(action: string, label: string, text: string) {
    // A rerun or recovery runs the instance's own version unless the
    // operator ticked "latest version".
    const latest = useLatest && (action === 'rerun' || action === 'recover_failed');
    // Otherwise actions that start work are previewed as a plan first
    // (PlanPanel), which runs the instance's own version.
    if (!latest && (action === 'rerun' || action === 'recover_failed')) {
      setPlanning({action, label});
      return;
    }
    const cur = detailRef.current;
    if (latest) text += ` It runs version ${cur?.latest_version} (the latest), not ${cur?.version}.`;
    if (!await confirmDialog(`${label} instance #${id}?`, text, label, action === 'stop')) return;
    try {
      const r = await api('POST', `/api/v1/instances/${id}/actions`, {json: latest ? {action, by: user(), version: 'latest'} : {action, by: user()}});
      flash(`${action} requested (command ${r.command_id}); the instance is ${r.state}.`, 'ok');
      keepUntil.current = Date.now() + 60000;
      wake.current();
    } catch (e) {
      flash(`${label} instance #${id}: ${describe(e)}`);
    }
  }
  // rerunFrom starts a new run of this instance's version, params, priority
  // and worker group at the tasks from (and everything downstream of them).
  // Secret params are not shown to the page (***): the new run takes the
  // workflow's values for them, as the dialog says.
  async function rerunFrom(name: string, from: string[], label: string) {
    const dd = detailRef.current;
    if (!dd) return;
    const secret = new Set(dd.secret_params || []);
    const params = Object.fromEntries(Object.entries(dd.params || {}).filter(([k, v]) => !secret.has(k) && v !== '***'));
    const dropped = Object.keys(dd.params || {}).filter((k) => !(k in params));
    // Ticked "latest version": the new run takes the latest (0: the API's default).
    const runVersion = useLatest && dd.latest_version ? dd.latest_version : dd.version;
    const text = `A new run of ${dd.workflow} version ${runVersion} with this run's params starts at ${from.join(', ')} ` +
      `and runs everything downstream of ${from.length === 1 ? 'it' : 'them'}; the tasks upstream do not run.` +
      (dropped.length ? ` The secret params ${dropped.join(', ')} take the workflow's values.` : '');
    // Previewed as a plan first (PlanPanel): the new run, the runs
    // downstream that would rerun, waits and estimates; Apply starts it.
    const body: Record<string, unknown> = {params, priority: dd.priority, worker_group: dd.worker_group, start_nodes: from,
      scope: 'downstream', from_instance: id};
    if (!(useLatest && dd.latest_version)) body.version = dd.version;
    setPlanning({action: 'rerun_from', label: `${label} (${name})`, text,
      target: {path: `/api/v1/projects/${enc(dd.project)}/workflows/${enc(dd.workflow)}/runs/plan`, body}});
  }
  async function taskAct(t: TaskAttempt, action: string, label: string, text: string) {
    if (!await confirmDialog(`${label} task ${t.name}?`, text, label, action === 'kill')) return;
    try {
      const r = await api('POST', `/api/v1/task-instances/${t.id}/actions`, {json: {action, by: user()}});
      flash(`${action} of task ${t.name} requested (command ${r.command_id}).`, 'ok');
      keepUntil.current = Date.now() + 60000;
      wake.current();
    } catch (e) {
      flash(`${label} task ${t.name}: ${describe(e)}`);
    }
  }

  if (missing) {
    return <div><h1>Instance #{id} not found</h1><p className="muted">{missing}</p><p><a href="#/instances">Go to instances</a>.</p></div>;
  }
  const d = detail;
  const hits = search ? names.filter((n) => matches(n, search)) : [];
  const side = logTask && (
    <aside className="sidepanel">
      <div className="tabs" role="tablist" aria-label="task panel">
        <button type="button" role="tab" aria-selected={panel === 'log'} className={panel === 'log' ? 'on' : ''} onClick={() => setPanel('log')}>Log</button>
        <button type="button" role="tab" aria-selected={panel === 'values'} className={panel === 'values' ? 'on' : ''} onClick={() => setPanel('values')}>Params and outputs</button>
      </div>
      {panel === 'log'
        ? <LogViewer task={logTask} onClose={() => setLogTask(null)} />
        : <TaskValues t={logTask} onClose={() => setLogTask(null)} />}
    </aside>
  );

  return (
    <div className="instance">
      <div className="titlebar">
        <h1>Instance #{id} {d ? <Badge state={d.state} /> : null}</h1>
        <div className="actions">
          {INSTANCE_ACTIONS.map(([action, label, text, fits]) => {
            const why = !d ? 'loading the instance…' : fits.includes(d.state) ? ''
              : `${label} is not possible while the instance is ${d.state}; it needs ${fits.join(' or ')}.`;
            return <Why key={action} why={why}>{(p) => (
              <button type="button" data-action={action} data-fits={fits.join(' ')} {...p} onClick={() => act(action, label, text)}>{label}</button>
            )}</Why>;
          })}
          {d && d.latest_version && d.latest_version !== d.version && ['succeeded', 'failed', 'stopped', 'paused'].includes(d.state) ?
            <label className="small" title="Rerun, Recover failed and Rerun from here run the instance's own version unless this is ticked">
              <input type="checkbox" id="use-latest" checked={useLatest} onChange={(e) => setUseLatest(e.target.checked)} /> latest version (v{d.latest_version})
            </label> : null}
          {d ? <a className="button" href={`#/grid/${enc(d.project)}/${enc(d.workflow)}`}>Grid</a> : null}
        </div>
      </div>
      {planning ? <>{planning.text ? <p className="hint" id="plan-what">{planning.text}</p> : null}
        <PlanPanel id={id} action={planning.action} label={planning.label} target={planning.target} onClose={() => setPlanning(null)}
        onApplied={(r) => {
          setPlanning(null);
          if (r.started?.length) { location.hash = `#/instances/${r.started[0]}`; return; }
          keepUntil.current = Date.now() + 60000; wake.current();
        }} /></> : null}
      {d ? <Head d={d} forecast={forecast} keepRow={projected.current} /> : <p className="muted">Loading…</p>}
      {d && d.pending && d.pending.length ? (
        <Held><section className="pendingbox" aria-label="tasks not started">
          <h2>Waiting to start</h2>
          <ul className="pending">
            {d.pending.map((p) => <li key={p.name} data-task={p.name} data-wait={p.wait.cause}>
              <code>{p.name}</code> <WaitText w={p.wait} /></li>)}
            {(d.pending_total || 0) > d.pending.length
              ? <li className="muted more">and {(d.pending_total || 0) - d.pending.length} more not started yet</li> : null}
          </ul>
        </section></Held>) : d && waited.current ? (
        <Held><section className="pendingbox" aria-label="tasks not started">
          <h2>Waiting to start</h2><p className="muted none">No task waits to start.</p>
        </section></Held>) : null}
      {spec instanceof Error && d ? <p className="muted">The definition of {d.workflow} version {d.version} is not available ({describe(spec)}); the tasks are shown without their dependencies.</p> : null}

      <div className="toolbar">
        <div className="tabs" role="tablist" aria-label="instance view">
          <button type="button" role="tab" id="tab-graph" aria-selected={view === 'graph'} className={view === 'graph' ? 'on' : ''} onClick={() => setView('graph')}>Graph</button>
          <button type="button" role="tab" id="tab-gantt" aria-selected={view === 'gantt'} className={view === 'gantt' ? 'on' : ''} onClick={() => setView('gantt')}>Gantt</button>
        </div>
        <label className="find">Find task <input type="search" id="dag-search" value={search} spellCheck={false}
          onChange={(e) => setSearch(e.target.value)}
          onKeyDown={(e) => { if (e.key === 'Enter' && hits.length) open(hits[0]); }} /></label>
        <span className="muted" id="dag-hits" aria-live="polite">{search ? `${hits.length} match${hits.length === 1 ? '' : 'es'}` : ''}</span>
        <label><input type="checkbox" id="dag-collapse" checked={!!fold} onChange={(e) => setFolded(e.target.checked)} /> Collapse by prefix</label>
        <Legend counts={counts} total={names.length} />
      </div>
      {selected && !fold?.members.has(selected) ? <NodeBar name={selected} t={latest.get(selected)}
        below={spec && !(spec instanceof Error) ? downstreamOf(specTasks, selected) : null}
        onLog={() => open(selected)} onValues={() => open(selected, 'values')}
        onRerun={(from, label) => rerunFrom(selected, from, label)} /> : null}
      <div className={['split', side ? 'with-side' : ''].join(' ')}>
        <div className="main-view">
          {view === 'graph'
            ? (d && specTasks.length ? <Dag key={fold ? 'folded' : 'all'} tasks={dagTasks} info={dagInfo} selected={selected} search={search}
                critical={critical} onSelect={select} onCursor={setSelected} onReady={() => { perf.ready(specTasks.length, dagTasks.length); drawnDone.current(); }} version={version} changed={fold ? null : changedRef.current} refit={!!logTask} />
              : <p className="muted">{d ? 'No tasks.' : ''}</p>)
            : d ? <Gantt tasks={d.tasks} critical={critical} onOpen={(t) => openAttempt(t, 'log')} forecast={forecast} ended={endedNames} /> : null}
        </div>
        {side}
      </div>

      <h2>Tasks</h2>
      {d ? <TaskList tasks={d.tasks} clock={version} current={logTask?.id} onOpen={openAttempt} onAct={taskAct} /> : null}

      <h2>Outputs</h2>
      <table className="grid outputs">
        <thead><tr><th>Output</th><th>Value</th><th>Task</th></tr></thead>
        <tbody>
          {d && d.outputs && d.outputs.length ? d.outputs.map((o) => {
            const t = d.tasks.find((x) => x.id === o.task_instance_id);
            return <tr key={`${o.task_instance_id}/${o.name}`} data-output={o.name} data-task-instance={o.task_instance_id}>
              <td><code>{o.name}</code></td><td className="value">{o.value}</td>
              <td>{t ? `${t.name} #${t.attempt} (${t.id})` : `${o.task} (${o.task_instance_id})`}</td></tr>;
          }) : <tr className="empty"><td colSpan={3}>No task has exported a value.</td></tr>}
        </tbody>
      </table>

      {d ? <RunDatasets id={id} project={d.project} /> : null}

      <h2>History</h2>
      <table className="grid history">
        <thead><tr><th>At</th><th>Action</th><th>By</th><th>Task</th><th>Detail</th></tr></thead>
        <tbody>
          {d && d.history.length ? d.history.map((e, i) => [e, i] as const).reverse().map(([e, i]) => {
            const t = e.task_instance_id ? d.tasks.find((x) => x.id === e.task_instance_id) : null;
            return <tr key={i}><td><Time iso={e.at} /></td><td>{e.action}</td><td>{e.by}</td>
              <td>{e.task_instance_id ? (t ? `${t.name} #${t.attempt} (${t.id})` : String(e.task_instance_id)) : <span className="muted">instance</span>}</td>
              <td className="detail">{e.detail}</td></tr>;
          }) : <tr className="empty"><td colSpan={5}>No operator actions.</td></tr>}
        </tbody>
      </table>
    </div>
  );
}

// NodeBar is what can be done with the chosen task: its log and values,
// and a new run from it ("Rerun from here": it and everything downstream)
// or from what follows it ("Rerun downstream": the tasks after it and
// theirs, not it).
function NodeBar({name, t, below, onLog, onValues, onRerun}: {name: string; t?: TaskAttempt; below: string[] | null;
  onLog: () => void; onValues: () => void; onRerun: (from: string[], label: string) => void}) {
  const noSpec = below === null ? 'the definition of this version is not available' : '';
  return (
    <div className="nodebar" id="node-bar" data-task={name} role="region" aria-label={`task ${name}`}>
      <span><code>{name}</code> {t ? <Badge state={t.state} /> : <span className="muted">not started</span>}</span>
      <Why why={t ? '' : 'the task has not started in this run'}>{(p) => <button type="button" className="small" id="node-log" {...p} onClick={onLog}>Log</button>}</Why>
      <Why why={t ? '' : 'the task has not started in this run'}>{(p) => <button type="button" className="small" id="node-values" {...p} onClick={onValues}>Values</button>}</Why>
      <Why why={noSpec}>{(p) => <button type="button" className="small" id="rerun-from" {...p}
        onClick={() => onRerun([name], 'Rerun from here')}>Rerun from here</button>}</Why>
      <Why why={noSpec || (below && !below.length ? `no task depends on ${name}` : '')}>{(p) => <button type="button" className="small" id="rerun-downstream" {...p}
        onClick={() => onRerun(below || [], 'Rerun downstream')}>Rerun downstream</button>}</Why>
    </div>
  );
}

// Projection is the running instance's projected end: when (in the
// user's zone) and how far off, the p90, the critical path of what
// remains and the deadline it is on track for or at risk of; or, when
// the critical path has a task with no history, plainly no number.
function Projection({f}: {f: Forecast}) {
  const thin = guessed(f);
  if (thin.length) {
    return <span id="projection" data-state="thin">Not enough history to project the end: {thin.join(', ')} {thin.length === 1 ? 'has' : 'have'} no
      recent successful run to go by.</span>;
  }
  const end = new Date(f.end).getTime();
  const slow = new Set(f.slow);
  const offPath = f.slow.filter((n) => !f.critical_path.includes(n));
  return (
    <span id="projection" data-state={f.deadline ? (f.late ? 'late' : 'on-track') : 'ok'} data-end={f.end}>
      <Time iso={f.end} /> <strong className="until">{untilText(end, Date.now())}</strong>
      {/* a line each (the p90 and deadline, the path): the header keeps its height as the words change */}
      <br /><span className="muted">p90 <Time iso={f.p90_end} /></span>
      {f.deadline ? (f.late
        ? <> · <span className="badge st-failed deadline">at risk</span> of missing its deadline <Time iso={f.deadline} /></>
        : <> · <span className="badge st-succeeded deadline">on track</span> for its deadline <Time iso={f.deadline} /></>) : null}
      <br /><span className="path">Critical path of what remains: {f.critical_path.length ? f.critical_path.map((n, i) =>
        <span key={n}>{i ? ' → ' : ''}<code>{n}</code>{slow.has(n) ? <span className="tag slow" title="running past its p90">slow</span> : null}</span>)
        : <span className="muted">none</span>}
      {/* on the same line: the header keeps its height as these come and go */}
      {offPath.length ? <span className="slow"> · running past their p90: {offPath.join(', ')}</span> : null}
      {f.no_history.length ? <span className="muted"> · no history (counted 1 min): {f.no_history.join(', ')}</span> : null}</span>
    </span>
  );
}

function Head({d, forecast, keepRow}: {d: Detail; forecast: Forecast | null; keepRow: boolean}) {
  const rows: [string, React.ReactNode][] = [
    ['Workflow', <><a href={`#/workflows/${enc(d.project)}/${enc(d.workflow)}`}>{d.project}/{d.workflow}</a> version {d.version}
      {d.git_commit ? <> from commit <code title={d.git_commit}>{d.git_commit.slice(0, 12)}</code></> : null}
      {d.latest_version && d.latest_version !== d.version ? <> · <a id="differs-from-latest" href={`#/edit/${enc(d.project)}/${enc(d.workflow)}?versions=${d.version}`}>
        differs from latest (v{d.latest_version})</a></> : null}</>],
    ['State', <><Badge state={d.state} />{d.reason ? <span className="reason"> {d.reason}</span> : null}</>],
    ['Trigger', <>{d.command_type}{d.schedule_id ? <span className="muted"> #{d.schedule_id}</span> : null}
      {d.backfill_id ? <> <a href={`#/backfills/${d.backfill_id}`}>#{d.backfill_id}</a></> : null}
      {d.schedule_time ? <> for <Time iso={d.schedule_time} zone={d.timezone} /></> : null}</>],
    ['Priority', d.priority],
    ['Worker group', d.worker_group],
    ['Params', <Params p={d.params} />],
    ['Dry run', d.dry_run ? 'yes: tasks are recorded as succeeded without running' : 'no'],
    ['Run times', String(d.run_times)],
    ['Master', d.host],
    ['Created', <Time iso={d.created_at} />],
    ['Started', <Time iso={d.start_time} />],
    ['Ended', <Time iso={d.end_time} />],
    ['Duration', <Duration start={d.start_time} end={d.end_time} />],
  ];
  if (forecast || keepRow) rows.push(['Projected end', <Held>{forecast ? <Projection f={forecast} />
    : <span id="projection" data-state="ended" className="muted">none: the run has ended</span>}</Held>]);
  if (d.parent && d.parent.instance_id) {
    rows.splice(1, 0, ['Parent', <a id="parent-link" href={`#/instances/${d.parent.instance_id}`}>instance #{d.parent.instance_id}</a>]);
  }
  if (d.start_nodes && d.start_nodes.length) rows.splice(6, 0, ['Start nodes', <>{d.start_nodes.join(', ')}<span className="muted"> (scope {d.scope || 'only'})</span></>]);
  return <dl className="kv head">{rows.map(([k, v]) => [<dt key={k + 't'}>{k}</dt>, <dd key={k + 'd'}>{v === '' ? <span className="muted">–</span> : v}</dd>])}</dl>;
}

// Held never gets shorter than it has been: what it holds may shrink (a
// projection of three lines becomes "the run has ended") without moving
// the page below under the pointer.
function Held({children}: {children: React.ReactNode}) {
  const box = useRef<HTMLDivElement>(null);
  const tallest = useRef(0);
  useLayoutEffect(() => {
    const el = box.current;
    if (!el) return;
    const h = el.getBoundingClientRect().height;
    if (h > tallest.current) {
      tallest.current = h;
      el.style.minHeight = h + 'px';
    }
  });
  return <div ref={box} className="held">{children}</div>;
}

// WaitText is why a task waits, its cause as data-wait for tests and styles.
// A reason naming thousands of upstreams is cut short (the rest in the
// graph and the list).
function WaitText({w}: {w: Wait}) {
  const r = w.reason.length > REASON_SHOWN ? w.reason.slice(0, REASON_SHOWN) + '…' : w.reason;
  return <span className="wait" data-wait={w.cause} title={r}>{r}{w.retry_at ? <> (at <Time iso={w.retry_at} />)</> : null}</span>;
}

function Params({p}: {p?: Record<string, string>}) {
  const keys = Object.keys(p || {}).sort();
  if (!keys.length) return <span className="muted">none</span>;
  return <span className="params">{keys.map((k) => <code key={k}>{k}={p![k]}</code>)}</span>;
}

function Legend({counts, total}: {counts: Map<string, number>; total: number}) {
  const states = TASK_STATES.filter((s) => counts.get(s));
  return (
    <ul className="legend" aria-label="task states" id="state-counts">
      <li className="muted">{total} tasks</li>
      {states.map((s) => (
        <li key={s || 'none'} className={['badge', stateClass(s)].join(' ')} data-state={s}>
          <span aria-hidden="true">{STATE_SYMBOL[s]}</span> {stateLabel(s)} <span className="n">{counts.get(s)}</span>
        </li>
      ))}
    </ul>
  );
}

function TaskValues({t, onClose}: {t: TaskAttempt; onClose: () => void}) {
  const list = (cls: string, m?: Record<string, string>) => {
    const keys = Object.keys(m || {}).sort();
    if (!keys.length) return <p className="muted">none</p>;
    return <dl className={'values ' + cls}>{keys.map((k) => [<dt key={k + 't'}>{k}</dt>, <dd key={k + 'd'}>{m![k]}</dd>])}</dl>;
  };
  const np = Object.keys(t.params || {}).length, no = Object.keys(t.outputs || {}).length;
  const plural = (n: number, w: string) => `${n} ${w}${n === 1 ? '' : 's'}`;
  return (
    <section className="valuespanel" data-task={t.name} aria-label={`Params and outputs of ${t.name}`}>
      <div className="titlebar"><h2><code>{t.name}</code> attempt {t.attempt}</h2>
        <span className="muted summary">{plural(np, 'param')} · {plural(no, 'output')}</span>
        <button type="button" className="small" onClick={onClose}>Close</button></div>
      {t.child_instance_id ? <p><a className="child-link" href={`#/instances/${t.child_instance_id}`}>Open sub-workflow instance #{t.child_instance_id}</a></p> : null}
      {t.message ? <p className="message">{t.message}</p> : null}
      {t.wait ? <p><WaitText w={t.wait} /></p> : null}
      <h3>Params</h3>{list('params-of', t.params)}
      <h3>Outputs</h3>{list('outputs-of', t.outputs)}
    </section>
  );
}

const ROW_H = 33;

// TaskList is every attempt, filtered by state and name, drawn by a window
// of rows so 10,000 attempts scroll like 10.
function TaskList({tasks, clock, current, onOpen, onAct}: {tasks: TaskAttempt[]; clock: number; current?: number;
  onOpen: (t: TaskAttempt, what: 'log' | 'values') => void; onAct: (t: TaskAttempt, a: string, l: string, text: string) => void}) {
  const [state, setState] = useState('');
  const [name, setName] = useState('');
  const [scroll, setScroll] = useState(0);
  // Stable handlers, so the memoized rows stay as they are.
  const handlers = useRef({onOpen, onAct});
  handlers.current = {onOpen, onAct};
  const open = useCallback((t: TaskAttempt, what: 'log' | 'values') => handlers.current.onOpen(t, what), []);
  const act = useCallback((t: TaskAttempt, a: string, l: string, text: string) => handlers.current.onAct(t, a, l, text), []);
  // The tasks come in id order (the API's, and new attempts after).
  const rows = useMemo(() => (!state && !name ? tasks : tasks.filter((t) => (!state || t.state === state) && matches(t.name, name))),
    [tasks, state, name]);
  const H = 420;
  const first = Math.max(0, Math.floor(scroll / ROW_H) - 10);
  const last = Math.min(rows.length, Math.ceil((scroll + H) / ROW_H) + 10);
  const present = TASK_STATES.filter((s) => s && tasks.some((t) => t.state === s));
  return (
    <div className="tasklist">
      <div className="filters">
        <label>State <select id="task-state-filter" value={state} onChange={(e) => setState(e.target.value)}>
          <option value="">any state</option>{present.map((s) => <option key={s} value={s}>{stateLabel(s)}</option>)}</select></label>
        <label>Name <input type="search" id="task-name-filter" value={name} spellCheck={false} onChange={(e) => setName(e.target.value)} /></label>
        <span className="muted" id="task-count">{rows.length} of {tasks.length} attempts</span>
      </div>
      <div className="rowsbox" style={{maxHeight: H}} onScroll={(e) => setScroll(e.currentTarget.scrollTop)}>
        <table className="grid tasks">
          <thead><tr><th>ID</th><th>Task</th><th>Attempt</th><th>State</th><th>Host</th><th>PID</th><th>Exit</th><th>Started</th><th>Ended</th><th>Duration</th><th>Actions</th></tr></thead>
          <tbody>
            {first > 0 ? <tr className="spacer" aria-hidden="true" style={{height: first * ROW_H}}><td colSpan={11} /></tr> : null}
            {rows.slice(first, last).map((t) => <TaskRow key={t.id} t={t} now={t.start_time && !t.end_time ? clock : 0} current={current === t.id} onOpen={open} onAct={act} />)}
            {last < rows.length ? <tr className="spacer" aria-hidden="true" style={{height: (rows.length - last) * ROW_H}}><td colSpan={11} /></tr> : null}
            {!rows.length ? <tr className="empty"><td colSpan={11}>{tasks.length ? 'No attempt matches the filters.' : 'No task has been submitted yet.'}</td></tr> : null}
          </tbody>
        </table>
      </div>
    </div>
  );
}

// TaskRow is one attempt's row: memoized, so an update re-renders only the
// rows whose attempt changed.
// now changes while the attempt runs, so its duration moves on.
const TaskRow = memo(function TaskRow({t, current, onOpen, onAct}: {t: TaskAttempt; now: number; current: boolean;
  onOpen: (t: TaskAttempt, what: 'log' | 'values') => void; onAct: (t: TaskAttempt, a: string, l: string, text: string) => void}) {
  return (
              <tr className={[t.superseded && 'superseded', current && 'current'].filter(Boolean).join(' ')}
                data-id={t.id} data-task={t.name} data-state={t.state}>
                <td className="num">{t.id}</td>
                <td>{t.name}{t.task_group ? <span className="tag" title="task group">{t.task_group}</span> : null}</td>
                <td className="num">{t.attempt}{t.superseded ? <span className="tag" title="an earlier attempt, replaced by a rerun or retry">superseded</span> : null}</td>
                <td><Badge state={t.state} />{t.dry_run ? <span className="tag">dry run</span> : null}
                  {t.wait && !t.superseded ? <> <WaitText w={t.wait} /></> : null}
                  {t.message ? <> <span className="message" title={t.message}>{t.message}</span></> : null}
                  {t.child_instance_id ? <> <a className="child-link" href={`#/instances/${t.child_instance_id}`}>sub-workflow #{t.child_instance_id}</a></> : null}</td>
                <td>{t.host}</td>
                <td className="num">{t.pid ? String(t.pid) : ''}</td>
                <td className="num">{t.exit_code === null || t.exit_code === undefined ? '' : String(t.exit_code)}</td>
                <td><Time iso={t.start_time} /></td>
                <td><Time iso={t.end_time} /></td>
                <td className="num"><Duration start={t.start_time} end={t.end_time} /></td>
                <td className="rowactions">
                  <button type="button" className="small" data-log={t.id} onClick={() => onOpen(t, 'log')}>Log</button>
                  <button type="button" className="small" data-values={t.id} onClick={() => onOpen(t, 'values')}>Values</button>
                  {t.superseded ? null : TASK_ACTIONS.filter(([, , fits]) => fits(t)).map(([action, label, , text]) =>
                    <button key={action} type="button" className="small" data-action={action} onClick={() => onAct(t, action, label, text(t))}>{label}</button>)}
                </td>
              </tr>
  );
});
