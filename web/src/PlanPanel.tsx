// PlanPanel previews what an action that starts work would run (an impact
// plan) before running it: a rerun or recover_failed (POST
// /api/v1/instances/{id}/plan), or, given a target, a rerun from tasks or a
// backfill (POST .../runs/plan, .../backfill/plan), whose new runs have
// negative ids. It shows the runs, downstream ones included, their tasks,
// waits, estimates and conflicts; its Apply runs exactly that plan (POST
// /api/v1/plans/{id}/apply) or shows the 409 that names what changed.
import {useEffect, useState} from 'react';
import {api, describe} from './api';
import {flash} from './notify';
import {duration, enc, Time} from './ui';

type Estimate = {p50_seconds: number; p90_seconds: number};
type PlannedTask = {name: string; estimate: Estimate; waits: string[]};
type Planned = {id: number; project: string; workflow: string; action: string; level: number; after: number[];
  tasks: PlannedTask[]; waits: string[]; estimate: Estimate; new?: boolean; schedule_time?: string};
type Conflict = {instance?: number; what: string; blocking: boolean};
export type Plan = {id: number; instance_id: number; action: string; downstream: string; instances: Planned[];
  estimate: Estimate; conflicts: Conflict[]; blocked: boolean; projects: string[]; summary: string; commands?: number[];
  started?: number[]; backfill_id?: number};

// PlanTarget is a plan of new runs: the plan route and the action's body.
export type PlanTarget = {path: string; body: Record<string, unknown>};

function secs(s: number): string {
  return duration(new Date(0).toISOString(), new Date(s * 1000).toISOString()) || '0s';
}

export function est(e: Estimate): string {
  return `${secs(e.p50_seconds)} (p90 ${secs(e.p90_seconds)})`;
}

export function PlanPanel({id, action, label, target, onClose, onApplied}: {id?: number; action: string; label: string;
  target?: PlanTarget; onClose: () => void; onApplied: (p: Plan) => void}) {
  const [downstream, setDownstream] = useState('none');
  const [plan, setPlan] = useState<Plan | null>(null);
  const [error, setError] = useState('');
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    let live = true;
    setPlan(null); setError('');
    const req = target ? api('POST', target.path, {json: {...target.body, downstream}})
      : api('POST', `/api/v1/instances/${id}/plan`, {json: {action, downstream}});
    req
      .then((p: Plan) => { if (live) setPlan(p); })
      .catch((e) => { if (live) setError(describe(e)); });
    return () => { live = false; };
  }, [id, action, downstream, target]);

  async function apply() {
    if (!plan) return;
    setBusy(true);
    try {
      const r: Plan = await api('POST', `/api/v1/plans/${plan.id}/apply`);
      const news = r.instances.filter((i) => i.new).length;
      flash(`Plan ${plan.id} applied: ${news ? `${news} new run(s)${r.backfill_id ? ` (backfill #${r.backfill_id})` : ''}, ` : ''}` +
        `${r.instances.length - news} instance(s) requested${r.commands?.length ? ` (commands ${r.commands.join(', ')})` : ''}.`, 'ok');
      onApplied(r);
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
          <option value="direct">direct: the runs that wait on {target ? 'the new runs' : 'this one'}</option>
          <option value="all">all levels</option>
        </select>
      </label>
      {error ? <p className="error" id="plan-error" role="alert">{error}</p> : null}
      {!plan && !error ? <p className="muted">Planning…</p> : null}
      {plan ? <>
        <p id="plan-summary">{plan.instances.length} instance(s), {tasks} task(s), about <strong>{est(plan.estimate)}</strong>
          {plan.projects.length > 1 ? <> across projects {plan.projects.join(', ')}</> : null}.</p>
        <table className="plan">
          <thead><tr><th>Instance</th><th>Level</th><th>Workflow</th><th>Action</th><th>Time</th><th>Tasks</th><th>Waits</th><th>Estimate</th></tr></thead>
          <tbody>
            {plan.instances.map((i) => {
              const waits = [...i.waits, ...i.tasks.flatMap((t) => t.waits.map((w) => `${t.name}: ${w}`))];
              return <tr key={i.id} data-instance={i.id} data-new={i.new ? 'true' : undefined} data-time={i.schedule_time || undefined}>
                <td>{i.new ? <span title="a run the plan starts">new ({-i.id})</span> : <a href={`#/instances/${i.id}`}>#{i.id}</a>}</td>
                <td className="num">{i.level}</td>
                <td><a href={`#/workflows/${enc(i.project)}/${enc(i.workflow)}`}>{i.project}/{i.workflow}</a></td>
                <td>{i.action}</td>
                <td>{i.schedule_time ? <Time iso={i.schedule_time} /> : <span className="muted">-</span>}</td>
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
