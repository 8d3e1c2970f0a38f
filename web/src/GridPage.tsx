// Grid: the last runs of a workflow by task, each cell the task's latest
// attempt state in that run (symbol and colour) and how long it ran; each
// run's column is headed by its date and duration; a click opens the run.
import {useEffect, useState} from 'react';
import {describe, get} from './api';
import {latestAttempts, type TaskAttempt} from './graph';
import {STATE_SYMBOL, stateClass, stateLabel} from './states';
import {Badge, Time, duration, enc} from './ui';

type Run = {id: number; state: string; start_time?: string; end_time?: string; created_at?: string; schedule_time?: string; tasks: TaskAttempt[]};

export function GridPage({project, workflow, n = 20}: {project: string; workflow: string; n?: number}) {
  const [runs, setRuns] = useState<Run[] | null>(null);
  const [err, setErr] = useState('');
  useEffect(() => {
    const ctrl = new AbortController();
    let timer = 0;
    async function load() {
      try {
        const list = await get(`/api/v1/instances?project=${enc(project)}&workflow=${enc(workflow)}&limit=${n}`, {signal: ctrl.signal});
        const ds: Run[] = await Promise.all(list.items.map((i: {id: number}) => get(`/api/v1/instances/${i.id}`, {signal: ctrl.signal})));
        setRuns(ds.reverse());
        setErr('');
      } catch (e: any) {
        if (e.name !== 'AbortError') setErr(describe(e));
      }
      timer = window.setTimeout(load, 5000);
    }
    load();
    return () => { ctrl.abort(); clearTimeout(timer); };
  }, [project, workflow, n]);
  const names: string[] = [];
  const seen = new Set<string>();
  for (const r of runs || []) for (const t of [...r.tasks].sort((a, b) => a.id - b.id)) if (!seen.has(t.name)) { seen.add(t.name); names.push(t.name); }
  const latest = (runs || []).map((r) => latestAttempts(r.tasks));
  return (
    <div>
      <div className="titlebar"><h1>Grid: <a href={`#/workflows/${enc(project)}/${enc(workflow)}`}>{project}/{workflow}</a></h1>
        <span className="muted">the last {n} runs, oldest left</span></div>
      {err ? <p className="apierror" role="alert">{err}</p> : null}
      {!runs ? <p className="muted">Loading…</p> : !runs.length ? <p className="muted">No runs yet.</p> : (
        <div className="gridwrap">
          <table className="grid runsgrid">
            <thead><tr><th scope="col">Task</th>{runs.map((r) => <th key={r.id} scope="col" className="run" data-id={r.id}><a href={`#/instances/${r.id}`}>#{r.id}</a><br /><Badge state={r.state} />
              <br /><span className="when"><Time iso={r.schedule_time || r.start_time || r.created_at} /></span>
              <br /><span className="took" title="how long the run took">{duration(r.start_time, r.end_time) || '–'}</span></th>)}</tr></thead>
            <tbody>{names.map((name) => (
              <tr key={name} data-task={name}><th scope="row">{name}</th>
                {runs.map((r, i) => {
                  const t = latest[i].get(name);
                  const s = t?.state || '';
                  const took = t ? duration(t.start_time, t.end_time) : '';
                  return <td key={r.id} className={'cell ' + stateClass(s)} data-state={s} data-took={took}>
                    <a href={`#/instances/${r.id}`} title={`${name} in run #${r.id}: ${stateLabel(s)}${t && t.attempt > 1 ? `, attempt ${t.attempt}` : ''}${took ? `, ran ${took}` : ''}`}>
                      <span aria-hidden="true">{STATE_SYMBOL[s]}</span><span className="sr-only">{stateLabel(s)}</span>
                      {took ? <span className="took">{took}</span> : null}</a></td>;
                })}</tr>))}</tbody>
          </table>
        </div>
      )}
    </div>
  );
}
