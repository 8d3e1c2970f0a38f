// Schedules: every cron schedule (of one project or all), a page at a time
// (keyset cursors) with a search by workflow name prefix, its next and
// last fires, and enable/disable; a schedule is set on its workflow's page.
import {api, describe} from './api';
import {flash, go} from './notify';
import {requestOf, schedulePath, type Schedule} from './SchedulePanel';
import {Pager, PrefixBox, usePaged, usePrefix} from './Paged';
import {Err, Time, enc, useList} from './ui';


// Next and last fires move with time: read again this often.
const REFRESH_MS = 2000;

export function SchedulesPage({query}: {query: URLSearchParams}) {
  const project = query.get('project') || '';
  const [projects] = useList<{name: string}>('/api/v1/projects');
  const [typed, prefix, setTyped] = usePrefix(query.get('prefix') || '');
  const paged = usePaged<Schedule>('/api/v1/schedules' + (project ? `?project=${enc(project)}` : ''), prefix, REFRESH_MS);
  const {items, err, reload} = paged;
  async function toggle(sc: Schedule) {
    try {
      await api('PUT', schedulePath(sc.project, sc.workflow), {json: {...requestOf(sc), enabled: !sc.enabled}});
      reload();
    } catch (e) { flash(`Schedule of ${sc.workflow}: ${describe(e)}`); }
  }
  const names = [...new Set([...(project ? [project] : []), ...(projects || []).map((p) => p.name)])];
  return (
    <div className="schedules">
      <div className="titlebar"><h1>Schedules</h1>
        <form className="filters" onSubmit={(e) => e.preventDefault()}>
          <select name="project" aria-label="Project" value={project} onChange={(e) => go('#/schedules' + (e.target.value ? `?project=${enc(e.target.value)}` : ''))}>
            <option value="">all projects</option>{names.map((p) => <option key={p} value={p}>{p}</option>)}</select>
          <PrefixBox id="sc-prefix" label="Find workflow" value={typed} onChange={setTyped} />
        </form></div>
      <Err text={err} />
      <table className="grid schedules">
        <thead><tr><th>Workflow</th><th>Cron</th><th>Timezone</th><th>Status</th><th>Catch-up</th><th>Next fire</th><th>Last fire</th><th>Updated</th><th></th></tr></thead>
        <tbody>{items === null ? <tr className="empty"><td colSpan={9}>Loading…</td></tr> : items.length ? items.map((sc) => (
          <tr key={`${sc.project}/${sc.workflow}`} data-workflow={`${sc.project}/${sc.workflow}`}>
            <td><a href={`#/workflows/${enc(sc.project)}/${enc(sc.workflow)}`}>{sc.project}/{sc.workflow}</a></td>
            <td><code>{sc.cron}</code></td><td>{sc.timezone || 'UTC'}</td>
            <td><span className={'badge ' + (sc.enabled ? 'st-enabled' : 'st-disabled')}>{sc.enabled ? 'enabled' : 'disabled'}</span></td>
            <td>{sc.catchup}</td><td><Time iso={sc.next_fire_time} zone={sc.timezone} /></td><td><Time iso={sc.last_fire_time} zone={sc.timezone} /></td>
            <td><Time iso={sc.updated_at} /><span className="muted"> {sc.updated_by}</span></td>
            <td className="rowactions"><button type="button" className="small" onClick={() => toggle(sc)}>{sc.enabled ? 'Disable' : 'Enable'}</button></td>
          </tr>
        )) : prefix ? <tr className="empty"><td colSpan={9}>No schedule of a workflow starting with <code>{prefix}</code>.</td></tr>
          : <tr className="empty"><td colSpan={9}>No schedules. Set one on a workflow page (its Schedule panel).</td></tr>}</tbody>
      </table>
      <Pager p={paged} what="schedules" />
    </div>
  );
}
