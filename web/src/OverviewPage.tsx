// Overview of a project: runs by state per day, and over the recent runs
// the slowest and the most-failing tasks.
import {useEffect, useState} from 'react';
import {describe, get} from './api';
import type {TaskAttempt} from './graph';
import {stateClass} from './states';
import {Badge, duration, enc} from './ui';
import {dayIn, userZone} from './zone';

type Inst = {id: number; workflow: string; state: string; created_at: string; start_time?: string; end_time?: string};

export function OverviewPage({project}: {project: string}) {
  const [projects, setProjects] = useState<string[]>([]);
  const [runs, setRuns] = useState<Inst[]>([]);
  const [tasks, setTasks] = useState<(TaskAttempt & {workflow: string})[]>([]);
  const [err, setErr] = useState('');
  useEffect(() => { get('/api/v1/projects').then((r: any) => setProjects(r.items.map((p: any) => p.name))).catch(() => {}); }, []);
  useEffect(() => {
    const ctrl = new AbortController();
    (async () => {
      try {
        const q = project ? `project=${enc(project)}&` : '';
        const list = await get(`/api/v1/instances?${q}limit=200`, {signal: ctrl.signal});
        setRuns(list.items);
        const recent = list.items.slice(0, 30);
        const ds = await Promise.all(recent.map((i: Inst) => get(`/api/v1/instances/${i.id}`, {signal: ctrl.signal})));
        setTasks(ds.flatMap((d: any) => (d.tasks || []).map((t: TaskAttempt) => ({...t, workflow: d.workflow}))));
      } catch (e: any) { if (e.name !== 'AbortError') setErr(describe(e)); }
    })();
    return () => ctrl.abort();
  }, [project]);
  // Days are the user's (zone.ts), as every time on the page.
  const zone = userZone();
  const days = new Map<string, Map<string, number>>();
  for (const r of runs) {
    const d = dayIn(r.created_at || '', zone);
    const m = days.get(d) || days.set(d, new Map()).get(d)!;
    m.set(r.state, (m.get(r.state) || 0) + 1);
  }
  const states = [...new Set(runs.map((r) => r.state))].sort();
  const byTask = new Map<string, {n: number; failed: number; ms: number; max: number}>();
  for (const t of tasks) {
    const k = `${t.workflow}/${t.name}`;
    const v = byTask.get(k) || byTask.set(k, {n: 0, failed: 0, ms: 0, max: 0}).get(k)!;
    v.n++;
    if (t.state === 'failed' || t.state === 'killed') v.failed++;
    if (t.start_time && t.end_time) {
      const ms = new Date(t.end_time).getTime() - new Date(t.start_time).getTime();
      v.ms += ms; v.max = Math.max(v.max, ms);
    }
  }
  const rows = [...byTask];
  const slow = [...rows].sort((a, b) => b[1].max - a[1].max).slice(0, 10);
  const failing = rows.filter((r) => r[1].failed).sort((a, b) => b[1].failed - a[1].failed).slice(0, 10);
  const fmt = (ms: number) => duration(new Date(0).toISOString(), new Date(ms).toISOString());
  return (
    <div>
      <div className="titlebar"><h1>Overview</h1>
        <label>Project <select value={project} onChange={(e) => { location.hash = '#/overview' + (e.target.value ? '/' + enc(e.target.value) : ''); }}>
          <option value="">all projects</option>{projects.map((p) => <option key={p} value={p}>{p}</option>)}</select></label></div>
      {err ? <p className="apierror" role="alert">{err}</p> : null}
      <h2>Runs by state per day (last {runs.length} runs)</h2>
      <table className="grid overview">
        <thead><tr><th>Day ({zone})</th>{states.map((s) => <th key={s}><Badge state={s} /></th>)}</tr></thead>
        <tbody>{[...days].map(([d, m]) => <tr key={d}><td>{d}</td>{states.map((s) => <td key={s} className={m.get(s) ? stateClass(s) : ''}>{m.get(s) || ''}</td>)}</tr>)}</tbody>
      </table>
      <div className="cols">
        <div className="col"><h2>Slowest tasks (recent 30 runs)</h2>
          <table className="grid slow"><thead><tr><th>Task</th><th>Longest</th><th>Mean</th><th>Attempts</th></tr></thead>
            <tbody>{slow.map(([k, v]) => <tr key={k}><td>{k}</td><td className="num">{fmt(v.max)}</td><td className="num">{fmt(v.ms / Math.max(1, v.n))}</td><td className="num">{v.n}</td></tr>)}</tbody></table></div>
        <div className="col"><h2>Most-failing tasks</h2>
          <table className="grid failing"><thead><tr><th>Task</th><th>Failed or killed</th><th>Attempts</th></tr></thead>
            <tbody>{failing.length ? failing.map(([k, v]) => <tr key={k}><td>{k}</td><td className="num">{v.failed}</td><td className="num">{v.n}</td></tr>)
              : <tr className="empty"><td colSpan={3}>No failures in the recent runs.</td></tr>}</tbody></table></div>
      </div>
    </div>
  );
}
