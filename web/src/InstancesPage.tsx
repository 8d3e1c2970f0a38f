// Instances: every run, newest first, filtered by project, workflow and
// state, a page at a time. The list follows the instance events of the
// stream (kinds=instance), reading its page again when one comes; it polls
// only while the stream is down (Page.follow in router.tsx).
import {useEffect, useState} from 'react';
import {get} from './api';
import {WORKFLOW_STATES} from './states';
import {Filters, hrefWith, type FilterValues} from './Filters';
import {Badge, Time, duration, enc} from './ui';

type Inst = {id: number; project: string; workflow: string; version: number; state: string; command_type: string; schedule_id?: number;
  backfill_id?: number; schedule_time?: string; timezone?: string; dry_run?: boolean; start_time?: string; end_time?: string; host: string};
type List = {items: Inst[]; total: number; offset: number};
interface Followed { follow: (url: string, fn: () => Promise<unknown>) => () => void; alive: boolean; signal: AbortSignal }

const LIMIT = 50;

// Trigger says how a run began: by hand, by a schedule for a time, a backfill.
export function Trigger({i}: {i: Inst}) {
  return <>
    <span>{i.command_type}</span>
    {i.schedule_id ? <span className="muted" title="the schedule that fired it"> #{i.schedule_id}</span> : null}
    {i.backfill_id ? <> <a href={`#/backfills/${i.backfill_id}`} title="the backfill it runs a time of">#{i.backfill_id}</a></> : null}
    {i.schedule_time ? <> for <Time iso={i.schedule_time} zone={i.timezone} /></> : null}
    {i.dry_run ? <span className="tag">dry run</span> : null}
  </>;
}

export function InstancesPage({query, page}: {query: URLSearchParams; page: Followed}) {
  const f: FilterValues = {project: query.get('project') || '', workflow: query.get('workflow') || '', state: query.get('state') || ''};
  const offset = Math.max(0, parseInt(query.get('offset') || '0', 10) || 0);
  const [list, setList] = useState<List | null>(null);
  const [refreshed, setRefreshed] = useState(0);
  useEffect(() => {
    const ev = new URLSearchParams({kinds: 'instance'});
    if (f.project) ev.set('project', f.project);
    if (f.workflow) ev.set('workflow', f.workflow);
    page.follow('/api/v1/events?' + ev, async () => {
      const q = new URLSearchParams({limit: String(LIMIT), offset: String(offset)});
      for (const [k, v] of Object.entries(f)) if (v) q.set(k, v);
      const r = await get('/api/v1/instances?' + q, {signal: page.signal});
      if (!page.alive) return;
      setList(r);
      setRefreshed((n) => n + 1);
    });
  }, []); // eslint-disable-line react-hooks/exhaustive-deps -- a filter change is a new page
  const from = list?.total ? list.offset + 1 : 0;
  const to = list ? list.offset + list.items.length : 0;
  const href = (changes: Record<string, string | number>) => hrefWith('#/instances', {...f, offset}, changes);
  return (
    <div className="instances">
      <div className="titlebar"><h1>Instances</h1><Filters base="#/instances" f={f} states={WORKFLOW_STATES} extra={{offset}} /></div>
      <table className="grid">
        <thead><tr><th>ID</th><th>Workflow</th><th>Ver</th><th>State</th><th>Trigger</th><th>Started</th><th>Duration</th><th>Host</th></tr></thead>
        <tbody data-refreshed={refreshed}>{!list ? <tr className="empty"><td colSpan={8}>Loading…</td></tr> : list.items.length ? list.items.map((i) => (
          <tr key={i.id} data-id={i.id}>
            <td><a href={`#/instances/${i.id}`}>#{i.id}</a></td>
            <td><a href={`#/workflows/${enc(i.project)}/${enc(i.workflow)}`}>{i.project}/{i.workflow}</a></td>
            <td className="num">v{i.version}</td><td><Badge state={i.state} /></td><td><Trigger i={i} /></td>
            <td><Time iso={i.start_time} /></td><td className="num">{duration(i.start_time, i.end_time)}</td><td>{i.host}</td>
          </tr>
        )) : <tr className="empty"><td colSpan={8}>{f.project || f.workflow || f.state ? 'No instances match.' : 'No runs yet: open a workflow and press Run, or give it a schedule.'}</td></tr>}</tbody>
      </table>
      {list ? <div className="pager">
        <span>{from}–{to} of {list.total}</span>
        {offset > 0 ? <a href={href({offset: Math.max(0, offset - LIMIT)})}>‹ newer</a> : <span className="muted">‹ newer</span>}
        {to < list.total ? <a href={href({offset: offset + LIMIT})}>older ›</a> : <span className="muted">older ›</span>}
      </div> : null}
    </div>
  );
}
