// Task instances: the attempts of every run the user may view, newest
// first, filtered by project, workflow, state, host, name and start time
// (GET /api/v1/task-instances); each row opens its run, or its log there.
import {useEffect, useState} from 'react';
import {describe, get} from './api';
import {rfc3339Local} from './zone';
import type {TaskAttempt} from './graph';
import {TASK_STATES, stateLabel} from './states';
import {Badge, Duration, Time, enc} from './ui';

type Listed = TaskAttempt & {project: string; workflow: string; workflow_instance_id: number};
type Filters = {project: string; workflow: string; state: string; host: string; name: string; from: string; to: string; latest: boolean};

const PAGE = 50;
const EMPTY: Filters = {project: '', workflow: '', state: '', host: '', name: '', from: '', to: '', latest: false};

// query is the API query of f, or an error naming the filter that is not
// valid (a start time the browser cannot read).
export function query(f: Filters, offset: number): string | Error {
  const q = new URLSearchParams();
  for (const k of ['project', 'workflow', 'state', 'host', 'name'] as const) if (f[k].trim()) q.set(k, f[k].trim());
  for (const k of ['from', 'to'] as const) {
    if (!f[k]) continue;
    const v = rfc3339Local(f[k]);
    if (!v) return new Error(`The ${k === 'from' ? 'started from' : 'started before'} time ${f[k]} is not a date and time.`);
    q.set(k, v);
  }
  if (f.latest) q.set('latest', 'true');
  q.set('limit', String(PAGE));
  if (offset) q.set('offset', String(offset));
  return q.toString();
}

export function TaskInstancesPage() {
  const [f, setF] = useState<Filters>(EMPTY);
  const [applied, setApplied] = useState<Filters>(EMPTY);
  const [offset, setOffset] = useState(0);
  const [page, setPage] = useState<{items: Listed[]; total: number} | null>(null);
  const [err, setErr] = useState('');
  useEffect(() => {
    const q = query(applied, offset);
    if (q instanceof Error) { setErr(q.message); return; }
    const ctrl = new AbortController();
    get(`/api/v1/task-instances?${q}`, {signal: ctrl.signal})
      .then((p: {items: Listed[]; total: number}) => { setPage(p); setErr(''); })
      .catch((e: any) => { if (e.name !== 'AbortError') setErr(describe(e)); });
    return () => ctrl.abort();
  }, [applied, offset]);
  const set = (k: keyof Filters) => (e: React.ChangeEvent<HTMLInputElement | HTMLSelectElement>) =>
    setF({...f, [k]: e.target.type === 'checkbox' ? (e.target as HTMLInputElement).checked : e.target.value});
  const filtered = Object.entries(applied).some(([, v]) => v);
  return (
    <div className="taskinstances">
      <div className="titlebar"><h1>Task instances</h1>
        <span className="muted">every attempt of every run, newest first</span></div>
      <form className="filters" id="ti-filters" onSubmit={(e) => { e.preventDefault(); setOffset(0); setApplied(f); }}>
        <label>Project <input id="ti-project" value={f.project} onChange={set('project')} spellCheck={false} /></label>
        <label>Workflow <input id="ti-workflow" value={f.workflow} onChange={set('workflow')} spellCheck={false} /></label>
        <label>State <select id="ti-state" value={f.state} onChange={set('state')}>
          <option value="">any state</option>{TASK_STATES.filter(Boolean).map((s) => <option key={s} value={s}>{stateLabel(s)}</option>)}</select></label>
        <label>Host <input id="ti-host" value={f.host} onChange={set('host')} spellCheck={false} placeholder="worker:port" /></label>
        <label>Task name has <input id="ti-name" value={f.name} onChange={set('name')} spellCheck={false} /></label>
        <label>Started from <input id="ti-from" type="datetime-local" step="1" value={f.from} onChange={set('from')} /></label>
        <label>before <input id="ti-to" type="datetime-local" step="1" value={f.to} onChange={set('to')} /></label>
        <label><input id="ti-latest" type="checkbox" checked={f.latest} onChange={set('latest')} /> latest attempts only</label>
        <button type="submit" className="primary" id="ti-apply">Filter</button>
        <button type="button" id="ti-clear" onClick={() => { setF(EMPTY); setOffset(0); setApplied(EMPTY); }}>Clear</button>
      </form>
      {err ? <p className="apierror" role="alert">{err}</p> : null}
      {!page ? <p className="muted">Loading…</p> : !page.items.length ? (
        filtered ? <p className="empty" id="ti-empty">No task instance matches these filters. <button type="button" className="small" onClick={() => { setF(EMPTY); setApplied(EMPTY); setOffset(0); }}>Clear the filters</button></p>
          : <div className="empty" id="ti-empty"><p>No task has run yet.</p>
            <p>Open <a href="#/workflows">Workflows</a> and run one (or create one in the <a href="#/edit/default">editor</a>); each of its tasks shows here as it runs, with its host, times and log.</p></div>
      ) : (
        <>
          <p className="muted" id="ti-count" aria-live="polite">{offset + 1}–{offset + page.items.length} of {page.total}</p>
          <table className="grid tasks" id="ti-table">
            <thead><tr><th>ID</th><th>Workflow</th><th>Run</th><th>Task</th><th>Attempt</th><th>State</th><th>Host</th><th>Started</th><th>Ended</th><th>Duration</th><th>Log</th></tr></thead>
            <tbody>{page.items.map((t) => (
              <tr key={t.id} data-id={t.id} data-task={t.name} data-state={t.state}>
                <td className="num">{t.id}</td>
                <td><a href={`#/workflows/${enc(t.project)}/${enc(t.workflow)}`}>{t.project}/{t.workflow}</a></td>
                <td><a href={`#/instances/${t.workflow_instance_id}`}>#{t.workflow_instance_id}</a></td>
                <td><code>{t.name}</code></td>
                <td className="num">{t.attempt}{t.superseded ? <span className="tag">superseded</span> : null}</td>
                <td><Badge state={t.state} /></td>
                <td>{t.host}</td>
                <td><Time iso={t.start_time} /></td>
                <td><Time iso={t.end_time} /></td>
                <td className="num"><Duration start={t.start_time} end={t.end_time} /></td>
                <td><a href={`#/instances/${t.workflow_instance_id}?task=${enc(t.name)}`} aria-label={`log of ${t.name} in run ${t.workflow_instance_id}`}>log</a></td>
              </tr>))}</tbody>
          </table>
          <div className="buttons pager">
            <button type="button" id="ti-prev" disabled={offset === 0} onClick={() => setOffset(Math.max(0, offset - PAGE))}>Newer</button>
            <button type="button" id="ti-next" disabled={offset + PAGE >= page.total} onClick={() => setOffset(offset + PAGE)}>Older</button>
          </div>
        </>
      )}
    </div>
  );
}
