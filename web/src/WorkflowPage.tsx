// One workflow: its DAG (the instance page's big-graph drawing: a canvas
// overview past a few hundred tasks, only the nodes in view mounted,
// collapse by prefix, search to a task), its spec as written, its
// versions, and the forms to run it (start nodes picked by search or from
// the graph, not a checkbox per task), schedule it and backfill it.
import {useCallback, useEffect, useMemo, useRef, useState, type FormEvent} from 'react';
import {api, describe, get} from './api';
import {confirmDialog, flash, go} from './notify';
import type {Page} from './router';
import {Dag, useFold, type NodeInfo} from './Dag';
import {matches, type SpecTask} from './graph';
import {BackfillForm} from './BackfillPage';
import {SchedulePanel, type Schedule} from './SchedulePanel';
import {TriggersPanel} from './TriggersPanel';
import {Params, useParams, valuesOf} from './Params';
import {PRIORITIES} from './states';
import {stripDefaults} from './spec';
import {toYAML} from './yaml';
import {Err, Time, enc} from './ui';
import {perf} from './perf';

type Task = SpecTask & {command?: string};
type Spec = {tasks: Task[]; description?: string; priority?: string; worker_group?: string; params?: Record<string, string>; [k: string]: unknown};
type Workflow = {name: string; version: number; spec: Spec;
  drift?: {since_version: number; promoted_version: number; edited_by: string}};
type Version = {version: number; spec_hash: string; created_at: string};

const MATCHES_SHOWN = 20; // start-node candidates listed for what is typed
const BIG_SPEC = 300; // a spec of more tasks is written out when asked

export function WorkflowPage({project, name, version, page}: {project: string; name: string; version: number; page: Page}) {
  const base = `/api/v1/projects/${enc(project)}/workflows/${enc(name)}`;
  const [wf, setWf] = useState<Workflow | null>(null);
  const [versions, setVersions] = useState<Version[] | null>(null);
  const [err, setErr] = useState('');
  useEffect(() => {
    Promise.all([get(base + (version ? `?version=${version}` : ''), {signal: page.signal}), get(base + '/versions', {signal: page.signal})])
      .then(([w, v]) => { perf.mark('workflow read'); setWf(w); setVersions(v.items); })
      .catch((e) => { if (page.alive && e.name !== 'AbortError') setErr(describe(e)); });
  }, [base, version, page]);

  if (err) return <div><h1>{project}/{name}</h1><p className="apierror" role="alert">{err}</p>
    <p><a href={`#/workflows/${enc(project)}`}>Back to the workflows of {project}</a></p></div>;
  if (!wf || !versions) return <div><h1>{project}/{name}</h1><p className="muted">Loading…</p></div>;
  return <Shown project={project} name={name} wf={wf} versions={versions} page={page} />;
}

function Shown({project, name, wf, versions, page}: {project: string; name: string; wf: Workflow; versions: Version[]; page: Page}) {
  const base = `/api/v1/projects/${enc(project)}/workflows/${enc(name)}`;
  const spec = wf.spec || {tasks: []};
  const tasks = spec.tasks || [];
  const latest = versions.reduce((m, v) => Math.max(m, v.version), 0);
  const [start, setStart] = useState<string[]>([]);
  const [sc, setSc] = useState<Schedule | null | undefined>(undefined);
  const onSchedule = useCallback((s: Schedule | null) => setSc(s), []);

  async function del() {
    if (!await confirmDialog(`Delete ${project}/${name}?`, 'Every version and the schedule of this workflow are deleted. Its past instances stay.', 'Delete')) return;
    try {
      await api('DELETE', base);
      go(`#/workflows/${enc(project)}`, `Workflow ${name} deleted.`);
    } catch (e) { flash(`Delete ${name}: ${describe(e)}`); }
  }
  const pick = (t: string) => setStart((s) => (s.includes(t) ? s : [...s, t]));

  return (
    <div className="workflow">
      <div className="titlebar">
        <h1><a href={`#/workflows/${enc(project)}`}>{project}</a> / {name}<span className="muted"> v{wf.version}</span>
          {wf.drift ? <> <a className="badge drift-badge" id="drift-badge" href={`#/promotions/${enc(project)}`}
            title={`version ${wf.drift.since_version} was made outside promotion by ${wf.drift.edited_by || 'the server'}; `+
              `schedules run approved version ${wf.drift.promoted_version}`}>drift</a></> : null}</h1>
        <div className="actions">
          <a className="button" href={`#/instances?project=${enc(project)}&workflow=${enc(name)}`}>Instances</a>
          <a className="button" href={`#/backfills?project=${enc(project)}&workflow=${enc(name)}`}>Backfills</a>
          <a className="button" id="edit-workflow" href={`#/edit/${enc(project)}/${enc(name)}`}>Edit</a>
          <button type="button" className="danger" id="delete-workflow" onClick={del}>Delete</button>
        </div>
      </div>
      {wf.version !== latest ? <p className="note">Showing version {wf.version}; the latest is <a href={`#/workflows/${enc(project)}/${enc(name)}`}>version {latest}</a>.</p> : null}
      {spec.description ? <p>{spec.description}</p> : null}
      <div className="cols">
        <div className="col">
          <h2>DAG</h2>
          {tasks.length ? <Graph tasks={tasks} picked={start} onPick={pick} /> : <p className="muted">No tasks.</p>}
          <SpecText spec={spec} />
          <h2>Versions</h2>
          <table className="grid">
            <thead><tr><th>Version</th><th>Spec hash</th><th>Created</th><th></th></tr></thead>
            <tbody>{[...versions].sort((a, b) => b.version - a.version).map((v) => (
              <tr key={v.version} className={v.version === wf.version ? 'current' : ''}>
                <td className="num">v{v.version}</td><td><code>{v.spec_hash.slice(0, 12)}</code></td><td><Time iso={v.created_at} /></td>
                <td>{v.version === wf.version ? <span className="muted">shown</span>
                  : <a href={`#/workflows/${enc(project)}/${enc(name)}?version=${v.version}`}>show</a>}</td></tr>))}</tbody>
          </table>
        </div>
        <div className="col side">
          <RunForm project={project} name={name} spec={spec} versions={versions} version={wf.version === latest ? 0 : wf.version}
            start={start} setStart={setStart} />
          <SchedulePanel page={page} project={project} workflow={name} priority={spec.priority} group={spec.worker_group} onChange={onSchedule} />
          <BackfillForm project={project} name={name} priority={spec.priority} group={spec.worker_group} defaults={spec.params} sc={sc} />
          <TriggersPanel project={project} workflow={name} />
        </div>
      </div>
    </div>
  );
}

// Graph is the DAG with a search box and collapse by prefix; the chosen
// task's bar adds it to the run's start nodes.
function Graph({tasks, picked, onPick}: {tasks: Task[]; picked: string[]; onPick: (t: string) => void}) {
  const [search, setSearch] = useState('');
  const [selected, setSelected] = useState('');
  const [fold, setFolded] = useFold(tasks);
  const byName = useMemo(() => new Map(tasks.map((t) => [t.name, t])), [tasks]);
  const names = useMemo(() => tasks.map((t) => t.name), [tasks]);
  const dagTasks = fold ? fold.tasks : tasks;
  const pickedSet = useMemo(() => new Set(picked), [picked]);
  // The nodes' looks are redrawn when the start nodes change.
  const looks = useRef(0);
  const version = useMemo(() => ++looks.current, [picked]);
  const info = useCallback((n: string): NodeInfo => {
    const ms = fold?.members.get(n);
    if (ms) return {state: '', label: `${ms.length} tasks`, title: `${n}: ${ms.length} tasks; click to expand`};
    const t = byName.get(n);
    const first = (t?.command || '').split('\n').map((l) => l.trim()).find((l) => l && l !== 'set -eu' && l !== 'set -e') || '';
    // A start node shows as "submitted": the run begins there.
    return {state: pickedSet.has(n) ? 'submitted' : '', label: pickedSet.has(n) ? 'start node' : first, title: `${n}\n${t?.command || ''}`};
  }, [fold, byName, pickedSet]);
  function select(n: string) {
    if (fold?.members.has(n)) {
      setFolded(false);
      setSearch(n.replace(/\*$/, ''));
      return;
    }
    setSelected(n);
  }
  const hits = search ? names.filter((n) => matches(n, search)) : [];
  return <>
    <div className="toolbar">
      <label className="find">Find task <input type="search" id="dag-search" value={search} spellCheck={false}
        onChange={(e) => setSearch(e.target.value)}
        onKeyDown={(e) => { if (e.key === 'Enter' && hits.length) { e.preventDefault(); setSelected(hits[0]); } }} /></label>
      <span className="muted" id="dag-hits" aria-live="polite">{search ? `${hits.length} match${hits.length === 1 ? '' : 'es'}` : ''}</span>
      <label><input type="checkbox" id="dag-collapse" checked={!!fold} onChange={(e) => setFolded(e.target.checked)} /> Collapse by prefix</label>
      <span className="muted">{tasks.length} task{tasks.length === 1 ? '' : 's'}</span>
    </div>
    {selected && byName.has(selected) ? (
      <div className="nodebar" id="node-bar" data-task={selected} role="region" aria-label={`task ${selected}`}>
        <code>{selected}</code>
        <button type="button" className="small" id="node-start" disabled={pickedSet.has(selected)} onClick={() => onPick(selected)}>
          {pickedSet.has(selected) ? 'A start node' : 'Start the run here'}</button>
      </div>) : null}
    <div className="dagbox">
      <Dag key={fold ? 'folded' : 'all'} tasks={dagTasks} info={info} selected={selected} search={search} onSelect={select} onCursor={setSelected}
        onReady={() => perf.ready(tasks.length, dagTasks.length)} version={version} changed={null} />
    </div>
  </>;
}

// SpecText is the spec as written. A big one (thousands of lines) is
// written out only when opened: its YAML and layout cost more of the
// first paint than the graph.
function SpecText({spec}: {spec: Spec}) {
  const big = (spec.tasks || []).length > BIG_SPEC;
  const [open, setOpen] = useState(!big);
  const [asJSON, setAsJSON] = useState(false);
  // As written: without the defaults the server spells in.
  const written = useMemo(() => (open ? stripDefaults(spec) : null), [open, spec]);
  const text = useMemo(() => (written ? (asJSON ? JSON.stringify(written, null, 2) : toYAML(written)) : ''), [asJSON, written]);
  return <>
    <div className="titlebar"><h2>Spec</h2>
      {open ? <button type="button" className="small" onClick={() => setAsJSON(!asJSON)}>{asJSON ? 'show YAML' : 'show JSON'}</button>
        : <button type="button" className="small" id="spec-show" onClick={() => setOpen(true)}>show the spec ({spec.tasks.length} tasks)</button>}</div>
    {open ? <pre className="spec" id="spec-text" tabIndex={0} aria-label={asJSON ? 'spec (JSON)' : 'spec (YAML)'}>{text}</pre> : null}
  </>;
}

// StartNodes picks the tasks a run starts from: type part of a name, then
// click a match (or Enter for the first); each chosen one can be removed.
function StartNodes({tasks, start, setStart}: {tasks: string[]; start: string[]; setStart: (s: string[]) => void}) {
  const [q, setQ] = useState('');
  const chosen = new Set(start);
  const hits = q.trim() ? tasks.filter((t) => matches(t, q.trim()) && !chosen.has(t)) : [];
  const add = (t: string) => { setStart([...start, t]); setQ(''); };
  return (
    <div className="startnodes">
      {start.length ? <ul className="chips" id="start-chosen" aria-label="start nodes chosen">
        {start.map((t) => <li key={t} data-task={t}><code>{t}</code>
          <button type="button" className="small" aria-label={`Remove start node ${t}`} onClick={() => setStart(start.filter((x) => x !== t))}>×</button></li>)}
      </ul> : <p className="hint">None: the run starts from the DAG's roots.</p>}
      <input type="search" id="start-find" aria-label="find a task to start from" placeholder="type part of a task name" value={q} spellCheck={false}
        onChange={(e) => setQ(e.target.value)}
        onKeyDown={(e) => { if (e.key === 'Enter') { e.preventDefault(); if (hits.length) add(hits[0]); } }} />
      {q.trim() ? <ul className="matches" id="start-matches" aria-label="matching tasks">
        {hits.slice(0, MATCHES_SHOWN).map((t) => <li key={t}><button type="button" className="small" data-task={t} onClick={() => add(t)}>{t}</button></li>)}
        {hits.length > MATCHES_SHOWN ? <li className="muted">and {hits.length - MATCHES_SHOWN} more: type more of the name</li> : null}
        {!hits.length ? <li className="muted">No task matches.</li> : null}
      </ul> : null}
    </div>
  );
}

function RunForm({project, name, spec, versions, version, start, setStart}: {project: string; name: string; spec: Spec; versions: Version[];
  version: number; start: string[]; setStart: (s: string[]) => void}) {
  const [params, setParams] = useParams({}, spec.params || {});
  const [ver, setVer] = useState(String(version));
  const [prio, setPrio] = useState('');
  const [group, setGroup] = useState('');
  const [scope, setScope] = useState('only');
  const [dry, setDry] = useState(false);
  const [busy, setBusy] = useState(false);
  const [err, setErr] = useState('');
  const names = useMemo(() => (spec.tasks || []).map((t) => t.name), [spec]);

  async function submit(e: FormEvent) {
    e.preventDefault();
    setErr('');
    const body: Record<string, unknown> = {};
    const p = valuesOf(params);
    if (Object.keys(p).length) body.params = p;
    if (ver !== '0') body.version = Number(ver);
    if (prio) body.priority = prio;
    if (group.trim()) body.worker_group = group.trim();
    if (start.length) { body.start_nodes = start; body.scope = scope; }
    if (dry) body.dry_run = true;
    setBusy(true);
    try {
      const inst = await api('POST', `/api/v1/projects/${enc(project)}/workflows/${enc(name)}/runs`, {json: body});
      go(`#/instances/${inst.id}`, `Instance #${inst.id} submitted.`);
    } catch (ex) {
      setErr(`Run ${name}: ${describe(ex)}`);
    } finally { setBusy(false); }
  }

  return (
    <form className="panel form" id="run-form" onSubmit={submit} aria-labelledby="run-h">
      <h2 id="run-h">Run</h2>
      <div className="field"><span>Params</span><Params rows={params} onChange={setParams} /></div>
      <label className="field"><span>Version</span><select name="version" id="run-version" value={ver} onChange={(e) => setVer(e.target.value)}>
        <option value="0">latest</option>{[...versions].sort((a, b) => b.version - a.version).map((v) => <option key={v.version} value={v.version}>v{v.version}</option>)}</select></label>
      <label className="field"><span>Priority</span><select name="priority" id="run-priority" value={prio} onChange={(e) => setPrio(e.target.value)}>
        <option value="">workflow's ({spec.priority || 'medium'})</option>{PRIORITIES.map((p) => <option key={p} value={p}>{p}</option>)}</select></label>
      <label className="field"><span>Worker group</span><input name="worker_group" id="run-group" placeholder={spec.worker_group || 'default'} spellCheck={false}
        value={group} onChange={(e) => setGroup(e.target.value)} /></label>
      {names.length ? <div className="field"><span>Start nodes</span><div>
        <StartNodes tasks={names} start={start} setStart={setStart} />
        <select name="scope" id="run-scope" aria-label="Scope" value={scope} disabled={!start.length} onChange={(e) => setScope(e.target.value)}>
          <option value="only">only these</option><option value="upstream">and upstream</option><option value="downstream">and downstream</option></select>
      </div></div> : null}
      <label className="field"><span>Dry run</span><span><input type="checkbox" name="dry_run" id="run-dry" checked={dry} onChange={(e) => setDry(e.target.checked)} /> record every task as succeeded without running it</span></label>
      <Err text={err} />
      <div className="buttons"><button type="submit" className="primary" id="run-submit" disabled={busy}>Run</button></div>
    </form>
  );
}
