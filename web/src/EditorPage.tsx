// The DAG editor: a palette of task types, a form per type, tasks
// connected by dragging from one node's right handle to another's left, a
// cycle refused while the edge is drawn, problems shown on their node
// before saving, auto-layout, zoom/pan/fit/minimap, search, and a YAML
// view of the same spec (either edits it). Save stores a new version.
//
// A big graph (more than BIG tasks) opens collapsed by name prefix (as the
// instance page does): each family of tasks (load_1, load_2, …) is one
// node that expands on a click or when search finds one of its tasks.
// Its whole layout is computed only when shown, validation runs after the
// first paint (a deferred render), and React Flow is given the same node
// and edge objects for what did not change, so a key typed into one task
// re-renders that node at most.
import {memo, useCallback, useDeferredValue, useEffect, useLayoutEffect, useMemo, useRef, useState} from 'react';
import {Background, Handle, MiniMap, Position, ReactFlow, ReactFlowProvider, useReactFlow, useStore,
  type Connection, type Edge, type Node, type NodeProps} from '@xyflow/react';
import {parse as parseYAML} from 'yaml';
import {api, describe, get} from './api';
import {go} from './notify';
import {toYAML} from './yaml';
import {collapse, edgeRefusal, inBox, layout, nearBox, NODE_H, NODE_W, type Collapsed, type Pos, type SpecTask} from './graph';
import {TASK_TYPES, TYPE_HELP, canonical, cleanWorkflow, hasComments, newTask, stripDefaults, typeOf, check, validateWorkflow,
  type Checked, type TaskType} from './spec';
import {WorkflowForm} from './WorkflowForm';
import {TaskForm} from './TaskForm';
import {record, redo, start, undo, undoKey, type History} from './history';
import {Versions} from './Versions';
import {enc} from './ui';
import {gitWhere, useGitBinding} from './GitPanel';
import {perf} from './perf';
import {FitControls, LOD_ZOOM, LookStore, Overview, useBigFit, useNear} from './Dag';
import {shallowSame, stable} from './stable';

type Spec = {tasks: SpecTask[]; [k: string]: unknown};
// A node's data is what it shows, nothing more: a change elsewhere in its
// task (a command typed) leaves the node object as it was.
type EData = {name: string; type: string; problem: string; hit: boolean; count?: number};
// Doc is what the undo stack holds: every change on the canvas or in a
// form makes a new Doc.
type Doc = {spec: Spec | null; pos: Map<string, Pos>; wfName: string};
type Mode = 'graph' | 'settings' | 'yaml' | 'versions';

// changedKey names the first field that differs between two versions of a
// task: the undo stack merges quick changes of one field into one step.
function changedKey(a: SpecTask, b: SpecTask): string {
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) if (a[k] !== b[k]) return k;
  return '';
}

const TYPE_ICON: Record<string, string> = {shell: '$', python: 'py', http: '⇄', sql: '⛁', sub_workflow: '⧉', dependent: '⧗', conditions: '◇', switch: '⑂'};

const EditNode = memo(function EditNode({data, selected}: NodeProps<Node<EData>>) {
  perf.count('editor node render');
  const {name, type, problem} = data;
  return (
    <div className={['dagnode', 'node', 'enode', problem && 'bad', selected && 'selected', data.hit && 'hit'].filter(Boolean).join(' ')}
      data-task={name} data-type={type} data-invalid={problem ? 'true' : 'false'}>
      <Handle type="target" position={Position.Left} title={`drop an edge here: that task then runs before ${name}`} />
      <span className="sym" aria-hidden="true">{TYPE_ICON[type]}</span>
      <span className="txt"><span className="name">{name}</span>
        <span className="sub">{problem ? <span className="problem">⚠ {problem}</span> : type}</span></span>
      <Handle type="source" position={Position.Right} title={`drag from here to a task that runs after ${name}`} />
    </div>
  );
});
// GroupNode is a folded family of tasks: a click expands it. Its handles
// only anchor the edges: an edge is drawn between tasks, not groups.
const GroupNode = memo(function GroupNode({data, selected}: NodeProps<Node<EData>>) {
  perf.count('editor node render');
  const {name, problem, count} = data;
  return (
    <div className={['dagnode', 'node', 'enode', 'egroup', problem && 'bad', selected && 'selected', data.hit && 'hit'].filter(Boolean).join(' ')}
      data-task={name} data-group={count} data-invalid={problem ? 'true' : 'false'} title={`${name}: ${count} tasks; click to expand`}>
      <Handle type="target" position={Position.Left} isConnectable={false} />
      <span className="sym" aria-hidden="true">▸</span>
      <span className="txt"><span className="name">{name}</span>
        <span className="sub">{problem ? <span className="problem">⚠ {problem}</span> : `${count} tasks · click to expand`}</span></span>
      <Handle type="source" position={Position.Right} isConnectable={false} />
    </div>
  );
});
const nodeTypes = {etask: EditNode, egroup: GroupNode};
const sameNode = (a: Node<EData>, b: Node<EData>) => a.type === b.type && a.position.x === b.position.x && a.position.y === b.position.y &&
  a.selected === b.selected && a.draggable === b.draggable && shallowSame(a.data, b.data);
const sameEdge = (a: Edge, b: Edge) => a.source === b.source && a.target === b.target && a.deletable === b.deletable;
const NO_TASKS: SpecTask[] = [];
const NO_NODES: Node<EData>[] = [];
const NO_EDGES: Edge[] = [];
const NO_POS = new Map<string, Pos>();

// FIT fits the graph to the canvas, never past 100 %: one or two tasks
// fitted to the whole canvas came out at 200 %, boxes too big to read as a graph.
const FIT = {maxZoom: 1};
// A graph of more than BIG tasks opens at 100 % on its first tasks, and
// React Flow mounts only the nodes in view: fitting it mounted every node
// (seconds at 1,000 tasks); search or fit view finds the rest.
const BIG = 300;
// The minimap draws every node it is given, on every change: past a few
// hundred it costs more than it shows (the collapsed view is the overview).
const MINIMAP_LIMIT = 400;

const TEMPLATE: Spec = {description: 'What this workflow does', tasks: []};

interface PageLike { confirmLeave: null | (() => string); signal: AbortSignal }

// versionsFrom opens the Versions tab with the diff from that version to
// the latest (an instance page's "differs from latest").
export function EditorPage({project, name, page, versionsFrom}: {project: string; name?: string; page: PageLike; versionsFrom?: number}) {
  return <ReactFlowProvider><Editor project={project} name={name} page={page} versionsFrom={versionsFrom} /></ReactFlowProvider>;
}

function Editor({project, name, page, versionsFrom}: {project: string; name?: string; page: PageLike; versionsFrom?: number}) {
  const existing = !!name;
  const [hist, setHist] = useState<History<Doc>>(() => start({spec: existing ? null : TEMPLATE, pos: new Map(), wfName: name || ''}));
  const {spec, pos, wfName} = hist.present;
  // edit makes a change the undo stack records; tag merges quick changes
  // of one thing (keys in a field, steps of a drag) into one step.
  const edit = useCallback((f: (d: Doc) => Doc, tag = '') => setHist((h) => record(h, f(h.present), tag, Date.now())), []);
  const setWfName = (v: string) => edit((d) => ({...d, wfName: v}), 'wfname');
  // gen counts undos and redos: the task form is made anew from the
  // restored task (its name and rows are its own state while typed).
  const [gen, setGen] = useState(0);
  const refocus = useRef<{field: string; label: string} | null>(null);
  const [mode, setMode] = useState<Mode>(versionsFrom && name ? 'versions' : 'graph');
  const [yaml, setYaml] = useState('');
  const [yamlErr, setYamlErr] = useState('');
  const [sel, setSel] = useState<string>('');
  const [refusal, setRefusal] = useState('');
  const [apiErr, setApiErr] = useState('');
  const [saving, setSaving] = useState(false);
  const [search, setSearch] = useState('');
  const [loadedVersion, setLoadedVersion] = useState(0);
  // base is the spec as loaded; its canonical text is made only when
  // asked (leaving): at 5,000 tasks it costs more than the first paint.
  const base = useRef<{spec: Spec | null; text: string | null}>({spec: existing ? null : TEMPLATE, text: null});
  // A big graph's collapse: null follows the default (collapsed when it
  // helps); open lists the groups expanded by a click or a search.
  const [foldChoice, setFoldChoice] = useState<boolean | null>(null);
  const [open, setOpen] = useState<ReadonlySet<string>>(() => new Set());
  // focus is a task to centre once the view that shows it is drawn; view
  // says how to show a graph just loaded.
  const focus = useRef('');
  const view = useRef<'' | 'open'>('');
  const yamlBase = useRef('');
  const saved = useRef(false);
  const rf = useReactFlow();
  // A project bound to Git: read_only refuses saves, write_back commits
  // them with the message typed here.
  const [git] = useGitBinding(project);
  const readOnly = git?.mode === 'read_only';
  const [commitMsg, setCommitMsg] = useState('');

  useEffect(() => {
    if (!existing) return;
    get(`/api/v1/projects/${enc(project)}/workflows/${enc(name!)}`, {signal: page.signal}).then((w: any) => {
      // The forms and the YAML view show the spec as written, not the
      // defaults the server spelled into it.
      perf.mark('editor spec read');
      const s = stripDefaults({...w.spec, tasks: w.spec.tasks || []});
      delete s.name;
      // The loaded spec is where undo stops. Its tasks' places are its
      // layout's, made when the whole graph is first shown (laidOut).
      setHist(start({spec: s, pos: new Map(), wfName: name!}));
      base.current = {spec: s, text: null};
      setLoadedVersion(w.version);
      view.current = 'open';
    }).catch((e: any) => { if (e.name !== 'AbortError') setApiErr(`${project}/${name}: ${describe(e)}`); });
  }, [project, name]); // eslint-disable-line react-hooks/exhaustive-deps

  const dirty = () => !saved.current && spec !== null &&
    ((spec !== base.current.spec && canonical(spec) !== (base.current.text ??= canonical(base.current.spec))) ||
      (mode === 'yaml' && yaml !== yamlBase.current) || wfName !== (name || ''));
  const dirtyRef = useRef(dirty);
  dirtyRef.current = dirty;
  useEffect(() => {
    page.confirmLeave = () => (dirtyRef.current() ? 'Leave the editor? Your changes to the spec are not saved.' : '');
    const before = (e: BeforeUnloadEvent) => { if (dirtyRef.current()) { e.preventDefault(); e.returnValue = ''; } };
    window.addEventListener('beforeunload', before);
    return () => window.removeEventListener('beforeunload', before);
  }, [page]);

  const tasks = spec?.tasks || NO_TASKS;
  // Validation follows the tasks in a deferred render, and a big graph's
  // first check waits until it is drawn (painted): run before React
  // Flow's first frame it delayed the paint. Each check starts from the
  // one before (spec.ts check): a key typed into one task checks that
  // task, not all 5,000. Saving checks the tasks as they are.
  const [painted, setPainted] = useState(false);
  const checked = useDeferredValue(painted || tasks.length <= BIG ? tasks : NO_TASKS);
  const lastCheck = useRef<Checked | null>(null);
  const problems = useMemo(() => {
    const c = check(checked, lastCheck.current);
    lastCheck.current = c;
    perf.count('editor tasks checked', c.looked);
    if (checked.length) perf.mark('editor checked');
    return c.problems;
  }, [checked]);
  const wfProblems = useMemo(() => (spec ? validateWorkflow(spec) : {}), [spec]);
  const q = search.trim().toLowerCase();
  const big = tasks.length > BIG;

  // laid is the layout of the graph as loaded (the places of the tasks
  // not moved by hand), made the first time the whole graph is shown.
  const laid = useRef<{of: Spec | null; at: Map<string, Pos>}>({of: null, at: NO_POS});
  const laidOut = () => {
    const b = base.current.spec;
    if (!b || !existing) return NO_POS;
    if (laid.current.of !== b) { laid.current = {of: b, at: layout(b.tasks)}; perf.mark('editor laid out'); }
    return laid.current.at;
  };
  const place = (n: string) => pos.get(n) ?? laidOut().get(n);

  // The collapsed view: depends only on the names and the dependencies.
  const shapeKey = useMemo(() => (big ? tasks.map((t) => t.name + '<' + (t.depends_on || []).join(',')).join(';') : ''), [big, tasks]);
  const fold: Collapsed | null = useMemo(() => {
    if (!big || foldChoice === false) return null;
    const f = collapse(tasks, 3, open);
    // By default a graph without families stays whole: folding would not help.
    const folded = tasks.length - f.family.size + new Set(f.family.values()).size;
    perf.mark('editor folded');
    return foldChoice === null && folded > tasks.length / 2 ? null : f;
  }, [shapeKey, foldChoice, open]); // eslint-disable-line react-hooks/exhaustive-deps
  const viewTasks = fold ? fold.tasks : tasks;
  // The collapsed view's places are its own layout's (it is not dragged).
  const foldPos = useMemo(() => (fold ? layout(fold.tasks) : null), [fold]);
  const at = (n: string) => (foldPos ? foldPos.get(n) : place(n));

  const setTasks = useCallback((f: (ts: SpecTask[]) => SpecTask[], tag = '') =>
    edit((d) => (d.spec ? {...d, spec: {...d.spec, tasks: f(d.spec.tasks)}} : d), tag), [edit]);

  // Ctrl+Z / Ctrl+Shift+Z (Cmd on a Mac; Ctrl+Y too) undo and redo every
  // change of the graph view, in a field too: the browser's own undo of a
  // field knows nothing of the graph and cannot be mixed with it. The YAML
  // view keeps the textarea's own undo.
  const modeRef = useRef(mode);
  modeRef.current = mode;
  useEffect(() => {
    const key = (e: KeyboardEvent) => {
      const what = undoKey(e);
      if (!what || (modeRef.current !== 'graph' && modeRef.current !== 'settings')) return;
      e.preventDefault();
      const a = document.activeElement as HTMLElement | null;
      const f = a?.closest('.taskform .field, .taskform fieldset');
      refocus.current = f && a ? {field: (f as HTMLElement).dataset.field || '', label: a.getAttribute('aria-label') || ''} : null;
      setHist((h) => (what === 'undo' ? undo(h) : redo(h)));
      setGen((g) => g + 1);
    };
    window.addEventListener('keydown', key, true);
    return () => window.removeEventListener('keydown', key, true);
  }, []);
  useEffect(() => {
    // The remade form takes the focus back where it was.
    const r = refocus.current;
    refocus.current = null;
    if (!r) return;
    const el = r.label ? document.querySelector(`.taskform [aria-label="${CSS.escape(r.label)}"]`)
      : document.querySelector(`.taskform .field[data-field="${CSS.escape(r.field)}"] :is(input, textarea, select)`);
    (el as HTMLElement | null)?.focus();
  }, [gen]);

  const byName = useMemo(() => new Map(tasks.map((t) => [t.name, t])), [tasks]);
  const lastNodes = useRef<Node<EData>[]>([]);
  const nodes: Node<EData>[] = useMemo(() => {
    const hit = (n: string) => !!q && n.toLowerCase().includes(q);
    const fresh = viewTasks.map((v, i): Node<EData> => {
      const members = fold?.members.get(v.name);
      if (members) {
        const bad = members.filter((m) => problems.has(m)).length;
        return {id: v.name, type: 'egroup', position: foldPos!.get(v.name)!, width: NODE_W, height: NODE_H, selected: sel === v.name,
          draggable: false, deletable: false, connectable: false,
          data: {name: v.name, type: 'group', problem: bad ? `${bad} with problems` : '', hit: members.some(hit), count: members.length}};
      }
      const t = byName.get(v.name) || v;
      const id = t.name || `#${i + 1}`;
      const pr = problems.get(id);
      return {id, type: 'etask', position: at(t.name) || {x: 20 + (i % 4) * 220, y: 20 + Math.floor(i / 4) * 80},
        width: NODE_W, height: NODE_H, selected: sel === t.name, draggable: !fold,
        data: {name: t.name, type: typeOf(t), problem: pr ? Object.values(pr)[0] : '', hit: hit(t.name)}};
    });
    if (fresh.length) perf.mark('editor nodes built');
    return (lastNodes.current = stable(lastNodes.current, fresh, sameNode));
  }, [viewTasks, fold, foldPos, byName, pos, problems, sel, q]); // eslint-disable-line react-hooks/exhaustive-deps
  const lastEdges = useRef<Edge[]>([]);
  const edges: Edge[] = useMemo(() => {
    const fresh = viewTasks.flatMap((t) => (t.depends_on || []).map((d): Edge => ({
      id: `${d}>${t.name}`, source: d, target: t.name, data: {from: d, to: t.name},
      // An edge of a group stands for several: it is deleted task by task.
      deletable: !fold?.members.has(d) && !fold?.members.has(t.name),
    })));
    return (lastEdges.current = stable(lastEdges.current, fresh, sameEdge));
  }, [viewTasks, fold]);
  const depCount = useMemo(() => tasks.reduce((a, t) => a + (t.depends_on?.length || 0), 0), [tasks]);

  // A view of more than BIG nodes zoomed out below LOD_ZOOM is drawn on
  // one canvas (the instance page's overview: a box per task, red when it
  // has a problem, the chosen one and search hits outlined) instead of as
  // nodes: fitted, all 5,000 would mount. fitting gives React Flow no
  // nodes for the frame before a fit, which would mount them all.
  const bigView = nodes.length > BIG;
  const far = useStore((st) => st.transform[2] < LOD_ZOOM);
  const allPos = useMemo(() => (bigView ? new Map(nodes.map((n) => [n.id, n.position])) : NO_POS), [bigView, nodes]);
  const [fitting, fitBig] = useBigFit(allPos);
  const lod = bigView && (far || fitting);
  // Near is the part of a big view around the screen (useNear): only its
  // nodes and edges are given to React Flow. React Flow mounts every edge
  // whose box crosses the screen, and in a 5,000-task fan-out thousands
  // do (the whole graph took 21 s to show); and it adopts every node it
  // is given (seconds at 5,000). The chosen task and one being dragged
  // stay, wherever they are.
  const near = useNear(bigView);
  const dragging = useRef(new Set<string>());
  const nearNodes = useMemo(() => {
    if (!near) return nodes;
    const b = nearBox(near);
    return nodes.filter((n) => inBox(b, n.position) || n.selected || dragging.current.has(n.id));
  }, [near, nodes]);
  const nearEdges = useMemo(() => {
    if (!near) return edges;
    const b = nearBox(near);
    return edges.filter((e) => inBox(b, allPos.get(e.source)) && inBox(b, allPos.get(e.target)));
  }, [near, edges, allPos]);
  const looks = useMemo(() => new LookStore(), []);
  useEffect(() => {
    if (!bigView) return;
    for (const n of nodes) looks.set(n.id, {state: n.data.problem ? 'failed' : '', label: '', title: '', selected: !!n.selected, hit: n.data.hit, critical: false});
  }, [bigView, nodes, looks]);
  // A click on the overview: the task under it, zoomed in and chosen (a
  // group expanded).
  function paneClick(e: {clientX: number; clientY: number}) {
    setSel('');
    if (!lod) return;
    const p = rf.screenToFlowPosition({x: e.clientX, y: e.clientY});
    for (const [name, q] of allPos) {
      if (p.x < q.x || p.x > q.x + NODE_W || p.y < q.y || p.y > q.y + NODE_H) continue;
      rf.setCenter(q.x + NODE_W / 2, q.y + NODE_H / 2, {zoom: 1, duration: 0});
      if (fold?.members.has(name)) expand(name); else setSel(name);
      return;
    }
  }

  // The first paint of a loaded graph, for the figures (perf.ts).
  const shown = useRef({tasks: 0, nodes: 0});
  shown.current = {tasks: tasks.length, nodes: nodes.length};
  useLayoutEffect(() => { if (nodes.length) perf.mark('editor committed'); });
  const onInit = useCallback(() => {
    perf.mark('editor flow ready');
    requestAnimationFrame(() => { perf.ready(shown.current.tasks, shown.current.nodes, 'editor'); setPainted(true); });
  }, []);

  // Centre a task once the view showing it is drawn (a group expanded
  // for it), and show a graph just loaded: a small one fitted, a big one
  // at 100 % on its first tasks (fitting mounts every node).
  useEffect(() => {
    if (view.current === 'open' && spec) {
      view.current = '';
      requestAnimationFrame(() => (nodes.length > BIG ? rf.setViewport({x: 20, y: 20, zoom: 1}) : rf.fitView(FIT)));
    }
    const f = focus.current;
    const p = f ? at(f) : undefined;
    if (!p) return;
    focus.current = '';
    rf.setCenter(p.x + NODE_W / 2, p.y + NODE_H / 2, {zoom: Math.max(1, rf.getZoom())});
  });
  // find centres the first task whose name holds text, expanding its group.
  function find(text: string) {
    const l = text.trim().toLowerCase();
    const t = l ? tasks.find((x) => x.name.toLowerCase().includes(l)) : undefined;
    if (!t) return;
    const g = fold?.family.get(t.name);
    if (g && fold?.members.has(g)) setOpen(new Set(open).add(g));
    focus.current = t.name;
  }
  function expand(g: string) {
    const ms = fold?.members.get(g);
    if (!ms) return;
    setOpen(new Set(open).add(g));
    focus.current = ms[0];
  }
  function fold1(g: string) {
    const o = new Set(open);
    o.delete(g);
    setOpen(o);
    focus.current = g;
    if (fold?.family.get(sel) === g) setSel('');
  }

  function add(type: TaskType, at?: Pos) {
    const t = newTask(type, new Set(tasks.map((x) => x.name)));
    // A new task goes right of the rightmost one, so it never covers
    // another; one dropped from the palette goes where it was dropped.
    let x = 20, y = 20, bottom = 0;
    for (const o of tasks) {
      const p = place(o.name);
      if (!p) continue;
      if (p.x + NODE_W + 40 > x) { x = p.x + NODE_W + 40; y = p.y; }
      bottom = Math.max(bottom, p.y);
    }
    if (x > 1200) { x = 20; y = bottom + 80; }
    if (at) ({x, y} = at);
    edit((d) => (d.spec ? {...d, pos: new Map(d.pos).set(t.name, {x, y}), spec: {...d.spec, tasks: [...d.spec.tasks, t]}} : d));
    setSel(t.name);
    setRefusal('');
  }

  // Drag from the palette: a press on a task type that moves past a few
  // pixels and is released over the canvas adds the task there (a press
  // without moving is a click, which adds it beside the others).
  const addRef = useRef(add);
  addRef.current = add;
  const palDrag = useRef<{type: TaskType; x: number; y: number; moved: boolean} | null>(null);
  useEffect(() => {
    const move = (e: PointerEvent) => {
      const d = palDrag.current;
      if (d && !d.moved && Math.hypot(e.clientX - d.x, e.clientY - d.y) > 6) { d.moved = true; document.body.classList.add('dragging-task'); }
    };
    const up = (e: PointerEvent) => {
      const d = palDrag.current;
      palDrag.current = null;
      document.body.classList.remove('dragging-task');
      if (!d || !d.moved) return;
      const box = document.querySelector('.editflow')?.getBoundingClientRect();
      if (!box || e.clientX < box.left || e.clientX > box.right || e.clientY < box.top || e.clientY > box.bottom) return;
      const p = rf.screenToFlowPosition({x: e.clientX, y: e.clientY});
      addRef.current(d.type, {x: p.x - NODE_W / 2, y: p.y - NODE_H / 2});
    };
    window.addEventListener('pointermove', move);
    window.addEventListener('pointerup', up);
    return () => { window.removeEventListener('pointermove', move); window.removeEventListener('pointerup', up); };
  }, [rf]);

  function update(oldName: string, t: SpecTask) {
    const old = tasks.find((x) => x.name === oldName);
    const tag = old ? `task:${oldName}:${changedKey(old, t)}` : '';
    edit((d) => {
      if (!d.spec) return d;
      const ts = d.spec.tasks.map((x) => {
        if (x.name === oldName) return t;
        if (oldName !== t.name && x.depends_on?.includes(oldName)) {
          // A rename follows into the tasks that name it.
          return {...x, depends_on: x.depends_on.map((n) => (n === oldName ? t.name : n))};
        }
        return x;
      });
      let p = d.pos;
      if (oldName !== t.name) {
        p = new Map(p);
        const was = p.get(oldName) ?? laid.current.at.get(oldName);
        p.delete(oldName);
        if (was) p.set(t.name, was);
      }
      return {...d, pos: p, spec: {...d.spec, tasks: ts}};
    }, oldName === t.name ? tag : '');
    if (oldName !== t.name) setSel(t.name);
  }

  function removeTasks(names: string[]) {
    const gone = new Set(names);
    setTasks((ts) => ts.filter((t) => !gone.has(t.name)).map((t) => (t.depends_on?.some((d) => gone.has(d))
      ? {...t, depends_on: t.depends_on.filter((d) => !gone.has(d))} : t)));
    if (gone.has(sel)) setSel('');
  }
  function removeEdges(es: {source: string; target: string}[]) {
    setTasks((ts) => ts.map((t) => {
      const drop = es.filter((e) => e.target === t.name).map((e) => e.source);
      return drop.length ? {...t, depends_on: (t.depends_on || []).filter((d) => !drop.includes(d))} : t;
    }));
  }

  // groupRefusal: an edge joins two tasks, never a folded group.
  const groupRefusal = useCallback((c: {source: string | null; target: string | null}) => {
    const g = [c.source, c.target].find((n) => n && fold?.members.has(n));
    return g ? `${g} is a group of ${fold!.members.get(g)!.length} tasks: expand it (click it) to connect one of them.` : '';
  }, [fold]);
  const isValid = useCallback((c: Connection | Edge) => {
    const why = groupRefusal(c) || edgeRefusal(tasks, c.source!, c.target!);
    if (why) setRefusal(why);
    return !why;
  }, [tasks, groupRefusal]);
  function connect(c: Connection) {
    const why = groupRefusal(c) || edgeRefusal(tasks, c.source, c.target);
    if (why) { setRefusal(why); return; }
    setRefusal('');
    setTasks((ts) => ts.map((t) => (t.name === c.target ? {...t, depends_on: [...(t.depends_on || []), c.source]} : t)));
  }

  function autoLayout() {
    edit((d) => ({...d, pos: layout(tasks)}));
    // A big graph is shown whole to arrange it.
    if (fold) setFoldChoice(false);
    requestAnimationFrame(() => (big ? rf.setViewport({x: 20, y: 20, zoom: 1}) : rf.fitView(FIT)));
  }

  function toYamlMode() {
    if (!spec) return;
    const text = toYAML(cleanWorkflow(spec));
    setYaml(text); yamlBase.current = text; setYamlErr(''); setMode('yaml');
  }
  function fromYaml(): boolean {
    // YAML only looked at changes nothing (its parse would reorder keys).
    if (yaml === yamlBase.current) return true;
    try {
      const v = parseYAML(yaml);
      if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error('the spec must be a mapping with tasks:');
      if (v.tasks !== undefined && !Array.isArray(v.tasks)) throw new Error('tasks: must be a list');
      const s: Spec = {...v, tasks: (v.tasks || []).map((t: unknown) => (t && typeof t === 'object' ? t : {name: String(t)}))};
      const named = typeof s.name === 'string' && !wfName ? s.name : wfName;
      delete s.name;
      const keep = new Map(pos);
      const fresh = layout(s.tasks);
      for (const t of s.tasks) if (!keep.has(t.name)) keep.set(t.name, place(t.name) ?? fresh.get(t.name)!);
      edit(() => ({spec: s, pos: keep, wfName: named}));
      setYamlErr('');
      return true;
    } catch (e: any) {
      setYamlErr(`The YAML does not parse: ${e.message}`);
      return false;
    }
  }
  function switchTo(m: Mode) {
    if (m === mode) return;
    if (mode === 'yaml' && !fromYaml()) return;
    if (m === 'yaml') toYamlMode(); else setMode(m);
    if (m === 'graph') requestAnimationFrame(() => (nodes.length > BIG ? rf.setViewport({x: 20, y: 20, zoom: 1}) : rf.fitView(FIT)));
  }

  async function save(e?: React.FormEvent) {
    e?.preventDefault();
    setApiErr('');
    const wf = wfName.trim();
    if (!wf) { setApiErr('Give the workflow a name: fill in the Name field.'); return; }
    let body: string, contentType: string;
    if (mode === 'yaml') {
      body = yaml; contentType = 'application/yaml'; // keeps the comments
    } else {
      const wp = Object.values(wfProblems);
      if (wp.length) {
        setApiErr(`Workflow settings: ${wp[0]}. Fix it on the Settings tab first.`);
        return;
      }
      // The tasks as they are now: the shown problems may be a key behind.
      const now = checked === tasks ? problems : check(tasks, lastCheck.current).problems;
      if (now.size) {
        const [n, p] = [...now][0];
        setApiErr(`Task ${n}: ${Object.values(p)[0]}${now.size > 1 ? ` (and ${now.size - 1} more tasks with problems)` : ''}. Fix the marked nodes first.`);
        return;
      }
      body = JSON.stringify(cleanWorkflow(spec!)); contentType = 'application/json';
    }
    setSaving(true);
    try {
      const q = git?.mode === 'write_back' && commitMsg.trim() ? `?message=${encodeURIComponent(commitMsg)}` : '';
      const r = await api('PUT', `/api/v1/projects/${enc(project)}/workflows/${enc(wf)}${q}`, {body, contentType});
      saved.current = true;
      go(`#/workflows/${enc(project)}/${enc(r.name)}`,
        r.created ? `${r.name} version ${r.version} saved.` : `No change: the spec is identical to ${r.name} version ${r.version}.`);
    } catch (err: any) {
      if (err.name !== 'AbortError') setApiErr(describe(err));
    } finally {
      setSaving(false);
    }
  }

  const selTask = tasks.find((t) => t.name === sel);
  const count = problems.size;
  return (
    <div className="editor-page">
      <div className="titlebar">
        <h1>{existing ? `Edit ${project}/${name}` : `New workflow in ${project}`}</h1>
        {loadedVersion ? <span className="muted">Editing version {loadedVersion}; saving a changed spec stores version {loadedVersion + 1}.</span> : null}
      </div>
      {readOnly && git ? <p className="banner warn" id="git-readonly" role="status">This project is read-only outside Git: edit{' '}
        <code>{(git.dir ? git.dir + '/' : '') + 'workflows/' + (name || wfName.trim() || '<name>') + '.yaml'}</code> in <code>{gitWhere(git)}</code> and
        push; the next sync applies it.</p> : null}
      {git?.mode === 'write_back' ? <p className="banner" id="git-writeback" role="status">Saving commits the spec to{' '}
        <code>{gitWhere(git)}</code> as you.</p> : null}
      <form className="editor" onSubmit={save}>
        <div className="row">
          <label htmlFor="wf-name">Name</label>
          <input id="wf-name" name="name" value={wfName} readOnly={existing} spellCheck={false}
            placeholder="workflow name" onChange={(e) => setWfName(e.target.value)} />
          <label htmlFor="wf-desc">Description</label>
          <input id="wf-desc" value={String(spec?.description ?? '')} disabled={!spec || mode !== 'graph'}
            onChange={(e) => { const v = e.target.value; edit((d) => (d.spec ? {...d, spec: {...d.spec, description: v}} : d), 'description'); }} />
        </div>
        <div className="tabs" role="tablist" aria-label="editor view">
          <button type="button" role="tab" id="view-graph" aria-selected={mode === 'graph'} className={mode === 'graph' ? 'on' : ''} onClick={() => switchTo('graph')}>Graph</button>
          <button type="button" role="tab" id="view-settings" aria-selected={mode === 'settings'} className={mode === 'settings' ? 'on' : ''} onClick={() => switchTo('settings')}>
            Settings{Object.keys(wfProblems).length ? ' ⚠' : ''}</button>
          <button type="button" role="tab" id="view-yaml" aria-selected={mode === 'yaml'} className={mode === 'yaml' ? 'on' : ''} onClick={() => switchTo('yaml')}>YAML</button>
          {existing ? <button type="button" role="tab" id="view-versions" aria-selected={mode === 'versions'} className={mode === 'versions' ? 'on' : ''} onClick={() => switchTo('versions')}>Versions</button> : null}
        </div>
        {mode === 'graph' && spec ? (
          <div className="editgrid">
            <div className="palette" role="group" aria-label="Add a task">
              <h2>Add a task</h2>
              {TASK_TYPES.map((ty) => (
                <button key={ty} type="button" className="paltype" data-type={ty} title={TYPE_HELP[ty] + ' (click to add, or drag onto the graph)'}
                  onClick={() => add(ty)} onPointerDown={(e) => { if (e.button === 0) palDrag.current = {type: ty, x: e.clientX, y: e.clientY, moved: false}; }}>
                  <span aria-hidden="true">{TYPE_ICON[ty]}</span> {ty}
                </button>
              ))}
              <h2>Graph</h2>
              <button type="button" id="auto-layout" onClick={autoLayout}>Auto-layout</button>
              <label className="find">Find task <input type="search" id="editor-search" value={search} spellCheck={false}
                onChange={(e) => { setSearch(e.target.value); find(e.target.value); }}
                onKeyDown={(e) => {
                  // Enter chooses the first match (it does not save the workflow).
                  if (e.key !== 'Enter') return;
                  e.preventDefault();
                  const l = search.trim().toLowerCase();
                  const t = l ? tasks.find((x) => x.name.toLowerCase().includes(l)) : undefined;
                  if (t) { setSel(t.name); focus.current = t.name; }
                }} /></label>
              {big ? <>
                <label><input type="checkbox" id="editor-collapse" checked={!!fold}
                  onChange={(e) => { setFoldChoice(e.target.checked); setOpen(new Set()); }} /> Collapse by prefix</label>
                {(fold ? [...open] : []).map((g) => (
                  <button type="button" key={g} className="small" data-fold={g} onClick={() => fold1(g)}>Collapse {g}</button>))}
              </> : null}
              <p className="hint">Drag from a task's right dot to another task's left dot: the second then depends on the first.
                Select a task or an edge and press Delete to remove it.</p>
            </div>
            <div className="canvas">
              <div className="flowbox editflow">
                <ReactFlow nodes={lod ? NO_NODES : nearNodes} edges={lod ? NO_EDGES : nearEdges} nodeTypes={nodeTypes} fitView={nodes.length <= BIG} fitViewOptions={FIT} minZoom={0.05}
                  // Set for a big graph collapsed too: were it set only with the
                  // whole graph's nodes, React Flow would mount all of them once first.
                  onlyRenderVisibleElements={big} onInit={onInit}
                  proOptions={{hideAttribution: true}} deleteKeyCode={['Delete', 'Backspace']}
                  isValidConnection={isValid} onConnect={connect}
                  onConnectStart={() => setRefusal('')}
                  onNodeClick={(_, n) => (fold?.members.has(n.id) ? expand(n.id) : setSel(n.id))} onPaneClick={paneClick}
                  onNodesChange={(chs) => {
                    const moves = chs.flatMap((c) => (c.type === 'position' && c.position ? [{id: c.id, p: c.position}] : []));
                    if (!moves.length) return;
                    // One drag is one undo step: its moves share a tag.
                    edit((d) => { const m = new Map(d.pos); for (const {id, p} of moves) m.set(id, p); return {...d, pos: m}; },
                      `move:${moves.map((x) => x.id).join(',')}`);
                  }}
                  onNodeDragStart={(_, n) => { dragging.current.add(n.id); }}
                  onNodeDragStop={() => { dragging.current.clear(); }}
                  onNodesDelete={(ns) => removeTasks(ns.map((n) => n.id).filter((n) => !fold?.members.has(n)))}
                  onEdgesDelete={(es) => removeEdges(es)}
                  aria-label="DAG editor">
                  <Background gap={20} />
                  {bigView ? <Overview pos={allPos} store={looks} on={lod} /> : null}
                  <FitControls big={bigView} onFit={fitBig} />
                  {nodes.length <= MINIMAP_LIMIT ? <MiniMap pannable zoomable ariaLabel="overview of the DAG" /> : null}
                </ReactFlow>
              </div>
              <p className={refusal ? 'refusal apierror' : 'refusal'} id="edge-refusal" role="status" aria-live="polite">{refusal}</p>
              <p className="muted" id="editor-summary">{tasks.length} tasks · {depCount} dependencies · {checked !== tasks ? 'checking…'
                : count ? `${count} with problems (marked ⚠)` : 'no problems found'}{fold ? ` · shown as ${nodes.length} nodes, families collapsed (click a group to expand it)` : ''}</p>
            </div>
            <div className="formcol">
              {selTask
                ? <TaskForm key={`${sel}#${gen}`} task={selTask} problems={problems.get(selTask.name)} others={tasks.map((t) => t.name).filter((n) => n !== sel)}
                  onChange={(t) => update(selTask.name, t)} onDelete={() => removeTasks([selTask.name])} />
                : <p className="muted">Select a task to edit it, or add one from the palette.</p>}
            </div>
          </div>
        ) : null}
        {mode === 'settings' && spec ? (
          <WorkflowForm key={gen} spec={spec} problems={wfProblems}
            onChange={(s) => {
              // Quick changes of one setting are one undo step.
              const k = Object.keys({...spec, ...s}).find((x) => spec[x] !== s[x]) || '';
              edit((d) => (d.spec ? {...d, spec: {...s, tasks: d.spec.tasks}} : d), `settings:${k}`);
            }} />
        ) : null}
        {mode === 'yaml' ? (
          <div className="yamlview">
            <label htmlFor="spec">Spec (YAML)</label>
            <p className="hint" id="yaml-comments">Saved as typed, without its comments and key order: the server keeps the spec's
              canonical form, so comments do not come back when the workflow is opened again.
              {hasComments(yaml) ? <strong> This text has comments: they are not stored.</strong> : null}</p>
            <textarea id="spec" name="spec" rows={26} spellCheck={false} autoComplete="off" value={yaml}
              onChange={(e) => setYaml(e.target.value)}
              onKeyDown={(e) => {
                const ta = e.currentTarget;
                if (e.key === 'Tab' && !e.shiftKey && !e.ctrlKey && !e.metaKey && !e.altKey) {
                  e.preventDefault(); ta.setRangeText('  ', ta.selectionStart, ta.selectionEnd, 'end'); setYaml(ta.value);
                } else if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) { e.preventDefault(); save(); }
              }} />
            {yamlErr ? <p className="apierror" role="alert" id="yaml-error">{yamlErr}</p> : null}
          </div>
        ) : null}
        {mode === 'versions' && existing ? <Versions project={project} name={name!} from={versionsFrom} /> : null}
        {!spec && !apiErr ? <p className="muted">Loading…</p> : null}
        <pre className="apierror" id="spec-error" role="alert" hidden={!apiErr}>{apiErr}</pre>
        <div className="buttons">
          {git?.mode === 'write_back' ? <input id="commit-message" aria-label="Commit message" placeholder="commit message (optional)"
            maxLength={4096} value={commitMsg} onChange={(e) => setCommitMsg(e.target.value)} /> : null}
          <button type="submit" className="primary" id="save-spec" disabled={saving || !spec || mode === 'versions' || readOnly}>{existing ? 'Save new version' : 'Create workflow'}</button>
          <a className="button" href={existing ? `#/workflows/${enc(project)}/${enc(name!)}` : `#/workflows/${enc(project)}`}>Cancel</a>
        </div>
      </form>
    </div>
  );
}
