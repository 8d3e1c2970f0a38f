// PlanPanel previews what a rerun or recover_failed would run (an impact
// plan, POST /api/v1/instances/{id}/plan) before running it: the runs,
// downstream ones included, their tasks, waits, estimates and conflicts; its
// Apply runs exactly that plan (POST /api/v1/plans/{id}/apply) or shows the
// 409 that names what changed.
import {useEffect, useState} from 'react';
import {api, describe} from './api';
import {flash} from './notify';
import {duration, enc} from './ui';

type Estimate = {p50_seconds: number; p90_seconds: number};
type PlannedTask = {name: string; estimate: Estimate; waits: string[]};
type Planned = {id: number; project: string; workflow: string; action: string; level: number; after: number[];
  tasks: PlannedTask[]; waits: string[]; estimate: Estimate};
type Conflict = {instance?: number; what: string; blocking: boolean};
export type Plan = {id: number; instance_id: number; action: string; downstream: string; instances: Planned[];
  estimate: Estimate; conflicts: Conflict[]; blocked: boolean; projects: string[]; summary: string; commands?: number[]};

function secs(s: number): string {
  return duration(new Date(0).toISOString(), new Date(s * 1000).toISOString()) || '0s';
}

export function est(e: Estimate): string {
  return `${secs(e.p50_seconds)} (p90 ${secs(e.p90_seconds)})`;
}

export function PlanPanel({id, action, label, onClose, onApplied}: {id: number; action: string; label: string;
  onClose: () => void; onApplied: () => void}) {
  const [downstream, setDownstream] = useState('none');
  const [plan, setPlan] = useState<Plan | null>(null);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    let live = true;
    setPlan(null); setError('');
    api('POST', `/api/v1/instances/${id}/plan`, {json: {action, downstream}})
      .then((p: Plan) => { if (live) setPlan(p); })
      .catch((e) => { if (live) setError(describe(e)); });
    return () => { live = false; };
  }, [id, action, downstream]);

  async function apply() {
    if (!plan) return;
    setBusy(true);
    try {
      const r: Plan = await api('POST', `/api/v1/plans/${plan.id}/apply`);
      flash(`Plan ${plan.id} applied: ${r.instances.length} instance(s) requested (commands ${(r.commands || []).join(', ')}).`, 'ok');
      onApplied();
    } catch (e) {
      setError(describe(e));
    } finally {
      setBusy(false);
    }
  }

  const tasks = plan ? plan.instances.reduce((n, i) => n + i.tasks.length, 0) : 0;
  return (
    <section className="planpanel" aria-label="plan preview" data-plan={plan ? plan.id : ''}>
      <h2>{label}: what would run</h2>
      <label>Downstream workflows{' '}
        <select id="plan-downstream" value={downstream} onChange={(e) => setDownstream(e.target.value)}>
          <option value="none">none</option>
          <option value="direct">direct: the runs that wait on this one</option>
          <option value="all">all levels</option>
        </select>
      </label>
      {error ? <p className="error" id="plan-error" role="alert">{error}</p> : null}
      {!plan && !error ? <p className="muted">Planning…</p> : null}
      {plan ? <>
        <p id="plan-summary">{plan.instances.length} instance(s), {tasks} task(s), about <strong>{est(plan.estimate)}</strong>
          {plan.projects.length > 1 ? <> across projects {plan.projects.join(', ')}</> : null}.</p>
        <table className="plan">
          <thead><tr><th>Instance</th><th>Level</th><th>Workflow</th><th>Action</th><th>Tasks</th><th>Waits</th><th>Estimate</th></tr></thead>
          <tbody>
            {plan.instances.map((i) => {
              const waits = [...i.waits, ...i.tasks.flatMap((t) => t.waits.map((w) => `${t.name}: ${w}`))];
              return <tr key={i.id} data-instance={i.id}>
                <td><a href={`#/instances/${i.id}`}>#{i.id}</a></td>
                <td className="num">{i.level}</td>
                <td><a href={`#/workflows/${enc(i.project)}/${enc(i.workflow)}`}>{i.project}/{i.workflow}</a></td>
                <td>{i.action}</td>
                <td className="plantasks">{i.tasks.length ? i.tasks.map((t) => t.name).join(', ') : <span className="muted">none</span>}</td>
                <td>{waits.length ? <ul>{waits.map((w) => <li key={w}>{w}</li>)}</ul> : <span className="muted">-</span>}</td>
                <td>{est(i.estimate)}</td>
              </tr>;
            })}
          </tbody>
        </table>
        {plan.conflicts.length ? <ul className="conflicts" id="plan-conflicts">
          {plan.conflicts.map((c) => <li key={c.what} className={c.blocking ? 'blocking' : ''}>
            {c.blocking ? <strong>Blocks: </strong> : <span className="muted">Note: </span>}{c.what}</li>)}
        </ul> : null}
      </> : null}
      <div className="actions">
        <button type="button" id="plan-apply" disabled={!plan || plan.blocked || busy}
          title={plan?.blocked ? 'a blocking conflict keeps this plan from running' : ''} onClick={apply}>Apply</button>
        <button type="button" id="plan-cancel" className="secondary" onClick={onClose}>Cancel</button>
      </div>
    </section>
  );
}
