// The ledger of fires of a schedule on its panel: its last 200 due times,
// newest first, in the schedule's zone, each with its outcome
// and the run it made; "Compensate missed" shows the runs it would make
// (the API's dry run) before making them.
import {useState} from 'react';
import {api, describe} from './api';
import {confirmDialog, flash} from './notify';
import {Err, Time, enc, useList} from './ui';

type Fire = {due_time: string; outcome: string; workflow_instance_id?: number; updated_at: string};
type Compensated = {dry_run: boolean; runs: {due_time: string; workflow_instance_id?: number}[]};

export function firesPath(project: string, id: number): string {
  return `/api/v1/projects/${enc(project)}/schedules/${id}/fires`;
}

export function Fires({project, id, zone}: {project: string; id: number; zone?: string}) {
  // The newest, read again every 10 s.
  const [fires, err, reload] = useList<Fire>(`${firesPath(project, id)}?order=desc&limit=200`, 10000);
  const [cerr, setCerr] = useState('');
  const [busy, setBusy] = useState(false);
  const missed = (fires || []).filter((f) => f.outcome === 'missed').length; // of those shown; the button runs every one

  async function compensate() {
    setCerr('');
    setBusy(true);
    try {
      const preview: Compensated = await api('POST', `${firesPath(project, id)}/compensate`, {json: {all_missed: true, dry_run: true}});
      if (!preview.runs.length) { flash('No missed fire to run.', 'ok'); return; }
      const times = preview.runs.slice(0, 10).map((r) => new Date(r.due_time).toISOString()).join(', ');
      const more = preview.runs.length > 10 ? ` and ${preview.runs.length - 10} more` : '';
      if (!await confirmDialog(`Run ${preview.runs.length} missed fire(s)?`,
        `One run each, with its schedule time: ${times}${more}.`, 'Run them', false)) return;
      const done: Compensated = await api('POST', `${firesPath(project, id)}/compensate`, {json: {all_missed: true}});
      flash(`${done.runs.length} missed fire(s) run.`, 'ok');
      reload();
    } catch (e) { setCerr(describe(e)); } finally { setBusy(false); }
  }

  return <div className="fires" id="schedule-fires">
    <h3>Fires <span className="muted">(the last 200)</span></h3>
    <Err text={err} />
    <Err text={cerr} />
    {fires === null ? <p className="muted">Loading…</p> : !fires.length ? <p className="muted">No fire due yet.</p> :
      <table className="fires-table">
        <thead><tr><th scope="col">Due</th><th scope="col">Outcome</th><th scope="col">Run</th></tr></thead>
        <tbody>{fires.map((f) => <tr key={f.due_time} className={'fire-' + f.outcome}>
          <td><Time iso={f.due_time} zone={zone} /></td>
          <td><span className={'badge fire-outcome ' + f.outcome}>{f.outcome.replace('_', ' ')}</span></td>
          <td>{f.workflow_instance_id ? <a href={`#/instances/${f.workflow_instance_id}`}>#{f.workflow_instance_id}</a> : <span className="muted">–</span>}</td>
        </tr>)}</tbody>
      </table>}
    <div className="buttons">
      <button type="button" id="fires-compensate" disabled={busy} onClick={compensate}>Compensate missed{missed ? ` (${missed})` : ''}</button>
    </div>
  </div>;
}
