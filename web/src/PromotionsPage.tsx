// Promotion with review: a target project's change requests (a form to
// ask for one, its drifted workflows flagged) and one request's page with
// its diff and, for a user who may review it (approve on the project, not
// its author), Approve and Reject.
import {useState, type FormEvent} from 'react';
import {api, describe} from './api';
import {flash} from './notify';
import {Err, Field, Time, enc, useList, useRead} from './ui';

type Change = {field: string; from: unknown; to: unknown};
type Diff = {workflow_fields: Change[]; tasks_added: string[]; tasks_removed: string[]; tasks_changed: {name: string; changes: Change[]}[];
  edges_added: {from: string; to: string}[]; edges_removed: {from: string; to: string}[]; text: string; text_omitted?: string};
type Request = {id: number; target_project: string; workflow: string; source_project: string; source_version: number; base_version: number;
  message: string; author: string; state: string; reviewer?: string; review_comment?: string; applied_version?: number; created_at: string;
  reviewed_at?: string; target_version?: number; stale?: boolean; can_review: boolean; diff?: Diff};
type Drift = {workflow: string; since_version: number; promoted_version: number; edited_by: string; detected_at: string};
type Gate = {project: string; source_project: string; require_review: boolean; alert_channels: string[]; drift: Drift[]};

const show = (v: unknown) => (v === null || v === undefined ? '(none)' : JSON.stringify(v));

function StateBadge({state}: {state: string}) {
  return <span className={`badge promo-${state}`}>{state}</span>;
}

export function PromotionsPage({project}: {project: string}) {
  const base = `/api/v1/projects/${enc(project)}`;
  const [list, listErr, reload] = useRead<{requests: Request[]}>(`${base}/promotions`, 5000);
  const [gate, gateErr] = useRead<Gate>(`${base}/promotion`, 5000);
  // source is null until typed in: the gate's source project stands in.
  const [f, setF] = useState<{source: string | null; workflow: string; message: string}>({source: null, workflow: '', message: ''});
  const [err, setErr] = useState('');
  const [busy, setBusy] = useState(false);
  const source = f.source ?? gate?.source_project ?? '';

  async function promote(e: FormEvent) {
    e.preventDefault();
    setErr('');
    if (!source.trim() || !f.workflow.trim()) { setErr('Name the source project and the workflow to promote.'); return; }
    setBusy(true);
    try {
      const r: Request = await api('POST', `${base}/promotions`, {json: {source_project: source.trim(), workflow: f.workflow.trim(),
        message: f.message || undefined}});
      flash(`Change request ${r.id} made.`, 'ok');
      location.hash = `#/promotions/${enc(project)}/${r.id}`;
    } catch (ex) { setErr(describe(ex)); } finally { setBusy(false); reload(); }
  }

  const drift = gate?.drift || [];
  return (
    <div className="promotions">
      <h1>Promotions into {project}</h1>
      <Err text={gateErr || listErr} />
      {gate ? <p className="hint" id="promotion-gate">
        {gate.require_review ? 'Review required: schedules here run the latest approved version of each workflow.' : 'Review not required.'}
        {gate.source_project ? ` Changes come from project ${gate.source_project}.` : ''}
      </p> : null}
      {drift.length ? <div className="panel drift" id="drift" role="status">
        <h2>Drift</h2>
        <ul>{drift.map((d) => <li key={d.workflow} data-drift={d.workflow}>
          <span className="badge drift-badge">drift</span> <a href={`#/workflows/${enc(project)}/${enc(d.workflow)}`}>{d.workflow}</a>: version {d.since_version} edited
          by {d.edited_by || 'the server'} outside promotion (<Time iso={d.detected_at} />); its schedules still run approved version {d.promoted_version}.
        </li>)}</ul>
      </div> : null}
      <table className="grid" id="requests">
        <thead><tr><th>#</th><th>Workflow</th><th>From</th><th>State</th><th>Author</th><th>Reviewer</th><th>Created</th></tr></thead>
        <tbody>{list === null ? <tr className="empty"><td colSpan={7}>Loading…</td></tr> : list.requests.length ? list.requests.map((r) => (
          <tr key={r.id} data-request={r.id}>
            <td className="num"><a href={`#/promotions/${enc(project)}/${r.id}`}>{r.id}</a></td><td>{r.workflow}</td>
            <td>{r.source_project} v{r.source_version}</td><td><StateBadge state={r.state} /></td><td>{r.author}</td>
            <td>{r.reviewer || <span className="muted">–</span>}</td><td><Time iso={r.created_at} /></td>
          </tr>)) : <tr className="empty"><td colSpan={7}>No change requests yet.</td></tr>}</tbody>
      </table>
      <form className="panel form" id="promote-form" onSubmit={promote} aria-label="ask to promote a workflow">
        <h2>Promote a workflow into {project}</h2>
        <Field id="pr-source" label="Source project"><input id="pr-source" value={source} spellCheck={false} autoComplete="off"
          onChange={(e) => setF({...f, source: e.target.value})} /></Field>
        <Field id="pr-workflow" label="Workflow"><input id="pr-workflow" value={f.workflow} spellCheck={false} autoComplete="off"
          onChange={(e) => setF({...f, workflow: e.target.value})} /></Field>
        <Field id="pr-message" label="Message"><textarea id="pr-message" rows={2} value={f.message}
          onChange={(e) => setF({...f, message: e.target.value})} /></Field>
        <div className="buttons"><button type="submit" className="primary" id="pr-submit" disabled={busy}>Request review</button></div>
        <Err text={err} />
      </form>
    </div>
  );
}

export function PromotionPage({project, id}: {project: string; id: number}) {
  const path = `/api/v1/projects/${enc(project)}/promotions/${id}`;
  const [r, readErr, reload] = useRead<Request>(path);
  const [comment, setComment] = useState('');
  const [err, setErr] = useState('');
  const [busy, setBusy] = useState(false);

  async function review(verb: 'approve' | 'reject') {
    setErr('');
    setBusy(true);
    try {
      const out: Request = await api('POST', `${path}/${verb}`, {json: {comment: comment || undefined}});
      flash(out.state === 'applied' ? `Change request ${id} approved: ${project}/${out.workflow} version ${out.applied_version}.` :
        `Change request ${id} rejected.`, 'ok');
      reload();
    } catch (ex) { setErr(describe(ex)); } finally { setBusy(false); }
  }

  const d = r?.diff;
  return (
    <div className="promotion">
      <p><a href={`#/promotions/${enc(project)}`}>← Promotions into {project}</a></p>
      <Err text={readErr} />
      {r ? <>
        <h1>Change request {r.id}: {r.source_project}/{r.workflow} v{r.source_version} → {project} <StateBadge state={r.state} /></h1>
        <dl className="facts">
          <dt>Author</dt><dd>{r.author}</dd>
          <dt>Created</dt><dd><Time iso={r.created_at} /></dd>
          {r.message ? <><dt>Message</dt><dd id="request-message">{r.message}</dd></> : null}
          <dt>Against</dt><dd>{r.base_version ? `${project} version ${r.base_version}` : `no version in ${project} yet`}</dd>
          {r.reviewer ? <><dt>Reviewer</dt><dd id="request-reviewer">{r.reviewer} <Time iso={r.reviewed_at} />{r.review_comment ? `: ${r.review_comment}` : ''}</dd></> : null}
          {r.applied_version ? <><dt>Applied as</dt><dd id="request-applied">
            <a href={`#/workflows/${enc(project)}/${enc(r.workflow)}?version=${r.applied_version}`}>{project}/{r.workflow} version {r.applied_version}</a></dd></> : null}
        </dl>
        {r.stale ? <p className="apierror" role="alert">{project}/{r.workflow} is at version {r.target_version} now, not {r.base_version}: this diff is
          stale and an approval is refused. Reject it and promote again.</p> : null}
        {r.can_review ? <div className="panel form" id="review">
          <h2>Review</h2>
          <Field id="rv-comment" label="Comment"><textarea id="rv-comment" rows={2} value={comment} onChange={(e) => setComment(e.target.value)} /></Field>
          <div className="buttons">
            <button type="button" className="primary" id="rv-approve" disabled={busy} onClick={() => review('approve')}>Approve and apply</button>
            <button type="button" className="danger" id="rv-reject" disabled={busy} onClick={() => review('reject')}>Reject</button>
          </div>
          <Err text={err} />
        </div> : r.state === 'open' ? <p className="hint" id="no-review">
          Only a user with approve on this project who did not make the request may review it.</p> : null}
        {d ? <div className="graphdiff" id="request-diff">
          <h2>Diff: {r.base_version ? `${project} v${r.base_version}` : 'nothing'} → {r.source_project} v{r.source_version}</h2>
          <ul>
            <li>tasks added: {d.tasks_added.join(', ') || 'none'}</li>
            <li>tasks removed: {d.tasks_removed.join(', ') || 'none'}</li>
            <li>tasks changed: {d.tasks_changed.map((t) => t.name).join(', ') || 'none'}</li>
            <li>dependencies added: {d.edges_added.map((e) => `${e.from} → ${e.to}`).join('; ') || 'none'}</li>
            <li>dependencies removed: {d.edges_removed.map((e) => `${e.from} → ${e.to}`).join('; ') || 'none'}</li>
          </ul>
          {d.workflow_fields.length || d.tasks_changed.length ? <table className="grid">
            <thead><tr><th>Where</th><th>Field</th><th>From</th><th>To</th></tr></thead>
            <tbody>
              {d.workflow_fields.map((c) => <tr key={'w' + c.field}><td>workflow</td><td>{c.field}</td><td><code>{show(c.from)}</code></td><td><code>{show(c.to)}</code></td></tr>)}
              {d.tasks_changed.flatMap((t) => t.changes.map((c) => <tr key={t.name + c.field}><td>task {t.name}</td><td>{c.field}</td>
                <td><code>{show(c.from)}</code></td><td><code>{show(c.to)}</code></td></tr>))}
            </tbody>
          </table> : null}
          {d.text ? <pre className="diff" id="request-spec-diff" aria-label="spec diff">{d.text.split('\n').map((l, i) =>
            <div key={i} className={l.startsWith('+') && !l.startsWith('+++') ? 'add' : l.startsWith('-') && !l.startsWith('---') ? 'del' : l.startsWith('@@') ? 'hunk' : ''}>{l}</div>)}</pre> : null}
          {d.text_omitted ? <p className="muted">Text diff omitted: {d.text_omitted}</p> : null}
        </div> : null}
      </> : null}
    </div>
  );
}

// PromotionsIndex links each project the user sees to its promotions.
export function PromotionsIndex() {
  const [items, err] = useList<{name: string}>('/api/v1/projects');
  return (
    <div className="promotions">
      <h1>Promotions</h1>
      <p className="hint">Change requests carry a workflow version from one project into another, for review.</p>
      <Err text={err} />
      <ul id="promotion-projects">{(items || []).map((p) => <li key={p.name}><a href={`#/promotions/${enc(p.name)}`}>{p.name}</a></li>)}</ul>
    </div>
  );
}
