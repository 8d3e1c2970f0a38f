// The DAG editor: a palette of task types, a form per type, tasks
// connected by dragging from one node's right handle to another's left, a
// cycle refused while the edge is drawn, problems shown on their node
// before saving, auto-layout, zoom/pan/fit/minimap, search, and a YAML
// view of the same spec (either edits it). Save stores a new version.
import {memo, useCallback, useEffect, useMemo, useRef, useState} from 'react';
import {Background, Controls, Handle, MiniMap, Position, ReactFlow, ReactFlowProvider, useReactFlow,
  type Connection, type Edge, type Node, type NodeProps} from '@xyflow/react';
import {parse as parseYAML} from 'yaml';
import {api, describe, get} from './legacy/api.js';
import {go} from './legacy/dom.js';
import {toYAML} from './legacy/yaml.js';
import {edgeRefusal, layout, NODE_H, NODE_W, type Pos, type SpecTask} from './graph';
import {TASK_TYPES, TYPE_HELP, cleanTask, newTask, typeOf, validate, type Problems, type TaskType} from './spec';
import {TaskForm} from './TaskForm';
import {Versions} from './Versions';
import {enc} from './ui';

type Spec = {tasks: SpecTask[]; [k: string]: unknown};
type EData = {task: SpecTask; problems?: Problems; hit: boolean};

const TYPE_ICON: Record<string, string> = {shell: '$', python: 'py', http: '⇄', sql: '⛁', sub_workflow: '⧉', dependent: '⧗', conditions: '◇', switch: '⑂'};

const EditNode = memo(function EditNode({data, selected}: NodeProps<Node<EData>>) {
  const t = data.task;
  const probs = data.problems ? Object.values(data.problems) : [];
  return (
    <div className={['dagnode', 'node', 'enode', probs.length && 'bad', selected && 'selected', data.hit && 'hit'].filter(Boolean).join(' ')}
      data-task={t.name} data-type={typeOf(t)} data-invalid={probs.length ? 'true' : 'false'}>
      <Handle type="target" position={Position.Left} title={`drop an edge here: that task then runs before ${t.name}`} />
      <span className="sym" aria-hidden="true">{TYPE_ICON[typeOf(t)]}</span>
      <span className="txt"><span className="name">{t.name}</span>
        <span className="sub">{probs.length ? <span className="problem">⚠ {probs[0]}</span> : typeOf(t)}</span></span>
      <Handle type="source" position={Position.Right} title={`drag from here to a task that runs after ${t.name}`} />
    </div>
  );
});
const nodeTypes = {etask: EditNode};

const TEMPLATE: Spec = {description: 'What this workflow does', tasks: []};

interface PageLike { confirmLeave: null | (() => string); signal: AbortSignal }

export function EditorPage({project, name, page}: {project: string; name?: string; page: PageLike}) {
  return <ReactFlowProvider><Editor project={project} name={name} page={page} /></ReactFlowProvider>;
}

function Editor({project, name, page}: {project: string; name?: string; page: PageLike}) {
  const existing = !!name;
  const [wfName, setWfName] = useState(name || '');
  const [spec, setSpec] = useState<Spec | null>(existing ? null : TEMPLATE);
  const [pos, setPos] = useState<Map<string, Pos>>(new Map());
  const [mode, setMode] = useState<'graph' | 'yaml' | 'versions'>('graph');
  const [yaml, setYaml] = useState('');
  const [yamlErr, setYamlErr] = useState('');
  const [sel, setSel] = useState<string>('');
  const [refusal, setRefusal] = useState('');
  const [apiErr, setApiErr] = useState('');
  const [saving, setSaving] = useState(false);
  const [search, setSearch] = useState('');
  const [loadedVersion, setLoadedVersion] = useState(0);
  const baseline = useRef<string | null>(existing ? null : JSON.stringify(TEMPLATE));
  const yamlBase = useRef('');
  const saved = useRef(false);
  const rf = useReactFlow();

  useEffect(() => {
    if (!existing) return;
    get(`/api/v1/projects/${enc(project)}/workflows/${enc(name!)}`, {signal: page.signal}).then((w: any) => {
      const s = {...w.spec, tasks: w.spec.tasks || []};
      delete s.name;
      setSpec(s);
      baseline.current = JSON.stringify(s);
      setLoadedVersion(w.version);
      setPos(layout(s.tasks));
      requestAnimationFrame(() => rf.fitView());
    }).catch((e: any) => { if (e.name !== 'AbortError') setApiErr(`${project}/${name}: ${describe(e)}`); });
  }, [project, name]); // eslint-disable-line react-hooks/exhaustive-deps

  const dirty = () => !saved.current && spec !== null &&
    (JSON.stringify(spec) !== baseline.current || (mode === 'yaml' && yaml !== yamlBase.current) || wfName !== (name || ''));
  const dirtyRef = useRef(dirty);
  dirtyRef.current = dirty;
  useEffect(() => {
    page.confirmLeave = () => (dirtyRef.current() ? 'Leave the editor? Your changes to the spec are not saved.' : '');
    const before = (e: BeforeUnloadEvent) => { if (dirtyRef.current()) { e.preventDefault(); e.returnValue = ''; } };
    window.addEventListener('beforeunload', before);
    return () => window.removeEventListener('beforeunload', before);
  }, [page]);

  const tasks = spec?.tasks || [];
  const problems = useMemo(() => validate(tasks), [tasks]);
  const q = search.trim().toLowerCase();

  const setTasks = useCallback((f: (ts: SpecTask[]) => SpecTask[]) => setSpec((s) => (s ? {...s, tasks: f(s.tasks)} : s)), []);

  const nodes: Node<EData>[] = useMemo(() => tasks.map((t, i) => ({
    id: t.name || `#${i + 1}`, type: 'etask', position: pos.get(t.name) || {x: 20 + (i % 4) * 220, y: 20 + Math.floor(i / 4) * 80},
    width: NODE_W, height: NODE_H, selected: sel === t.name,
    data: {task: t, problems: problems.get(t.name || `#${i + 1}`), hit: !!q && t.name.toLowerCase().includes(q)},
  })), [tasks, pos, problems, sel, q]);
  const edges: Edge[] = useMemo(() => tasks.flatMap((t) => (t.depends_on || []).map((d) => ({
    id: `${d}>${t.name}`, source: d, target: t.name, data: {from: d, to: t.name}, deletable: true,
  }))), [tasks]);

  function add(type: TaskType, at?: Pos) {
    const t = newTask(type, new Set(tasks.map((x) => x.name)));
    // A new task goes right of the rightmost one, so it never covers
    // another; one dropped from the palette goes where it was dropped.
    let x = 20, y = 20;
    for (const p of pos.values()) { if (p.x + NODE_W + 40 > x) { x = p.x + NODE_W + 40; y = p.y; } }
    if (x > 1200) { x = 20; y = Math.max(...[...pos.values()].map((p) => p.y), 0) + 80; }
    if (at) ({x, y} = at);
    setPos((m) => new Map(m).set(t.name, {x, y}));
    setTasks((ts) => [...ts, t]);
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
    setTasks((ts) => ts.map((x) => {
      if (x.name === oldName) return t;
      if (oldName !== t.name) {
        // A rename follows into the tasks that name it.
        const y = {...x};
        if (y.depends_on) y.depends_on = y.depends_on.map((d) => (d === oldName ? t.name : d));
        return y;
      }
      return x;
    }));
    if (oldName !== t.name) {
      setPos((m) => { const n = new Map(m); const p = n.get(oldName); n.delete(oldName); if (p) n.set(t.name, p); return n; });
      setSel(t.name);
    }
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

  const isValid = useCallback((c: Connection | Edge) => {
    const why = edgeRefusal(tasks, c.source!, c.target!);
    if (why) setRefusal(why);
    return !why;
  }, [tasks]);
  function connect(c: Connection) {
    const why = edgeRefusal(tasks, c.source, c.target);
    if (why) { setRefusal(why); return; }
    setRefusal('');
    setTasks((ts) => ts.map((t) => (t.name === c.target ? {...t, depends_on: [...(t.depends_on || []), c.source]} : t)));
  }

  function autoLayout() {
    setPos(layout(tasks));
    requestAnimationFrame(() => rf.fitView());
  }

  function toYamlMode() {
    if (!spec) return;
    const text = toYAML({...spec, tasks: spec.tasks.map(cleanTask)});
    setYaml(text); yamlBase.current = text; setYamlErr(''); setMode('yaml');
  }
  function fromYaml(): boolean {
    try {
      const v = parseYAML(yaml);
      if (!v || typeof v !== 'object' || Array.isArray(v)) throw new Error('the spec must be a mapping with tasks:');
      if (v.tasks !== undefined && !Array.isArray(v.tasks)) throw new Error('tasks: must be a list');
      const s: Spec = {...v, tasks: (v.tasks || []).map((t: unknown) => (t && typeof t === 'object' ? t : {name: String(t)}))};
      if (typeof s.name === 'string' && !wfName) setWfName(s.name);
      delete s.name;
      setSpec(s);
      const keep = new Map(pos);
      const fresh = layout(s.tasks);
      for (const t of s.tasks) if (!keep.has(t.name)) keep.set(t.name, fresh.get(t.name)!);
      setPos(keep);
      setYamlErr('');
      return true;
    } catch (e: any) {
      setYamlErr(`The YAML does not parse: ${e.message}`);
      return false;
    }
  }
  function switchTo(m: 'graph' | 'yaml' | 'versions') {
    if (m === mode) return;
    if (mode === 'yaml' && !fromYaml()) return;
    if (m === 'yaml') toYamlMode(); else setMode(m);
    if (m === 'graph') requestAnimationFrame(() => rf.fitView());
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
      if (problems.size) {
        const [n, p] = [...problems][0];
        setApiErr(`Task ${n}: ${Object.values(p)[0]}${problems.size > 1 ? ` (and ${problems.size - 1} more tasks with problems)` : ''}. Fix the marked nodes first.`);
        return;
      }
      body = JSON.stringify({...spec, tasks: tasks.map(cleanTask)}); contentType = 'application/json';
    }
    setSaving(true);
    try {
      const r = await api('PUT', `/api/v1/projects/${enc(project)}/workflows/${enc(wf)}`, {body, contentType});
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
      <form className="editor" onSubmit={save}>
        <div className="row">
          <label htmlFor="wf-name">Name</label>
          <input id="wf-name" name="name" value={wfName} readOnly={existing} spellCheck={false}
            placeholder="workflow name" onChange={(e) => setWfName(e.target.value)} />
          <label htmlFor="wf-desc">Description</label>
          <input id="wf-desc" value={String(spec?.description ?? '')} disabled={!spec || mode !== 'graph'}
            onChange={(e) => setSpec((s) => (s ? {...s, description: e.target.value} : s))} />
        </div>
        <div className="tabs" role="tablist" aria-label="editor view">
          <button type="button" role="tab" id="view-graph" aria-selected={mode === 'graph'} className={mode === 'graph' ? 'on' : ''} onClick={() => switchTo('graph')}>Graph</button>
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
                onChange={(e) => {
                  setSearch(e.target.value);
                  const hit = tasks.find((t) => e.target.value && t.name.toLowerCase().includes(e.target.value.toLowerCase()));
                  const p = hit && pos.get(hit.name);
                  if (p) rf.setCenter(p.x + NODE_W / 2, p.y + NODE_H / 2, {zoom: Math.max(1, rf.getZoom())});
                }} /></label>
              <p className="hint">Drag from a task's right dot to another task's left dot: the second then depends on the first.
                Select a task or an edge and press Delete to remove it.</p>
            </div>
            <div className="canvas">
              <div className="flowbox editflow">
                <ReactFlow nodes={nodes} edges={edges} nodeTypes={nodeTypes} fitView minZoom={0.05}
                  proOptions={{hideAttribution: true}} deleteKeyCode={['Delete', 'Backspace']}
                  isValidConnection={isValid} onConnect={connect}
                  onConnectStart={() => setRefusal('')}
                  onNodeClick={(_, n) => setSel(n.id)} onPaneClick={() => setSel('')}
                  onNodesChange={(chs) => {
                    for (const c of chs) if (c.type === 'position' && c.position) {
                      const p = c.position;
                      setPos((m) => new Map(m).set(c.id, p));
                    }
                  }}
                  onNodesDelete={(ns) => removeTasks(ns.map((n) => n.id))}
                  onEdgesDelete={(es) => removeEdges(es)}
                  aria-label="DAG editor">
                  <Background gap={20} />
                  <Controls aria-label="zoom and fit" />
                  <MiniMap pannable zoomable ariaLabel="overview of the DAG" />
                </ReactFlow>
              </div>
              <p className={refusal ? 'refusal apierror' : 'refusal'} id="edge-refusal" role="status" aria-live="polite">{refusal}</p>
              <p className="muted" id="editor-summary">{tasks.length} tasks · {edges.length} dependencies · {count ? `${count} with problems (marked ⚠)` : 'no problems found'}</p>
            </div>
            <div className="formcol">
              {selTask
                ? <TaskForm key={sel} task={selTask} problems={problems.get(selTask.name)} others={tasks.map((t) => t.name).filter((n) => n !== sel)}
                  onChange={(t) => update(selTask.name, t)} onDelete={() => removeTasks([selTask.name])} />
                : <p className="muted">Select a task to edit it, or add one from the palette.</p>}
            </div>
          </div>
        ) : null}
        {mode === 'yaml' ? (
          <div className="yamlview">
            <label htmlFor="spec">Spec (YAML; comments are kept when you save from this view)</label>
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
        {mode === 'versions' && existing ? <Versions project={project} name={name!} /> : null}
        {!spec && !apiErr ? <p className="muted">Loading…</p> : null}
        <pre className="apierror" id="spec-error" role="alert" hidden={!apiErr}>{apiErr}</pre>
        <div className="buttons">
          <button type="submit" className="primary" id="save-spec" disabled={saving || !spec || mode === 'versions'}>{existing ? 'Save new version' : 'Create workflow'}</button>
          <a className="button" href={existing ? `#/workflows/${enc(project)}/${enc(name!)}` : `#/workflows/${enc(project)}`}>Cancel</a>
        </div>
      </form>
    </div>
  );
}
