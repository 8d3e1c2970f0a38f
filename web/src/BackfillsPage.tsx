// Backfills: every backfill (by project, workflow and state) with its
// progress, read again every 2 s while the tab is visible. One backfill's
// page and the form that starts one are BackfillPage.tsx.
import {Filters, type FilterValues} from './Filters';
import {Badge, Err, Time, enc, useList} from './ui';

export type Backfill = {id: number; project: string; workflow: string; state: string; dry_run?: boolean; total: number; submitted: number;
  parallelism: number; requested_by: string; created_at: string; progress: {succeeded: number; failed: number; unfinished: number}};

const STATES = ['running', 'done', 'failed', 'stopped'] as const;
const REFRESH_MS = 2000;

// Progress is a stacked bar of the runs that succeeded, failed and are
// unfinished (the rest of its width: the times not submitted yet), and
// the same in words.
export function Progress({b}: {b: Backfill}) {
  const W = 120, H = 10, total = Math.max(b.total, 1), p = b.progress;
  let x = 0;
  const bars = ([['succeeded', p.succeeded], ['failed', p.failed], ['unfinished', p.unfinished]] as const).flatMap(([cls, n]) => {
    if (!n) return [];
    const w = W * n / total;
    const r = <rect key={cls} className={cls} x={x} y={0} width={w} height={H} />;
    x += w;
    return [r];
  });
  return (
    <span className="bfprogress">
      <svg className="bfbar" width={W} height={H} viewBox={`0 0 ${W} ${H}`} aria-hidden="true"><rect className="rest" x={0} y={0} width={W} height={H} />{bars}</svg>
      <span className="submitted" title="times submitted / schedule times">{b.submitted}/{b.total}</span>
      {' · '}<span className="n-succeeded">{p.succeeded} succeeded</span>
      {' · '}<span className={'n-failed' + (p.failed ? ' bad' : '')}>{p.failed} failed</span>
      {' · '}<span className="n-unfinished">{p.unfinished} unfinished</span>
    </span>
  );
}

export function BackfillsPage({query}: {query: URLSearchParams}) {
  const f: FilterValues = {project: query.get('project') || '', workflow: query.get('workflow') || '', state: query.get('state') || ''};
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(f)) if (v) q.set(k, v);
  const [items, err] = useList<Backfill>('/api/v1/backfills' + (q.toString() ? '?' + q : ''), REFRESH_MS);
  return (
    <div className="backfills">
      <div className="titlebar"><h1>Backfills</h1><Filters base="#/backfills" f={f} states={STATES} /></div>
      <p className="hint">Start a backfill from a workflow page: it runs the workflow once per schedule time of a past range.</p>
      <Err text={err} />
      <table className="grid backfills">
        <thead><tr><th>ID</th><th>Workflow</th><th>State</th><th>Progress</th><th>Parallelism</th><th>Requested by</th><th>Created</th></tr></thead>
        <tbody>{items === null ? <tr className="empty"><td colSpan={7}>Loading…</td></tr> : items.length ? items.map((b) => (
          <tr key={b.id} data-id={b.id} data-state={b.state}>
            <td><a href={`#/backfills/${b.id}`}>#{b.id}</a></td>
            <td><a href={`#/workflows/${enc(b.project)}/${enc(b.workflow)}`}>{b.project}/{b.workflow}</a></td>
            <td><Badge state={b.state} />{b.dry_run ? <span className="tag">dry run</span> : null}</td>
            <td><Progress b={b} /></td><td className="num">{b.parallelism}</td><td>{b.requested_by}</td><td><Time iso={b.created_at} /></td>
          </tr>
        )) : <tr className="empty"><td colSpan={7}>No backfills match. Start one from a workflow page.</td></tr>}</tbody>
      </table>
    </div>
  );
}
