// A workflow's webhook triggers (README, "Webhook triggers"): the list,
// a form to create one with its param mapping, the token shown once (on
// creation and rotation) with a copy button, enable/disable, rotate,
// delete, and the deliveries of the chosen trigger with their outcome and
// run.
import {useState, type FormEvent} from 'react';
import {api, describe} from './api';
import {confirmDialog, flash} from './notify';
import {Err, Time, enc, useList} from './ui';

export type Trigger = {id: number; name: string; params: Record<string, string>; enabled: boolean; hook_path: string;
  created_by: string; created_at: string; rotated_at?: string};
type Delivery = {id: number; received_at: string; idempotency_key?: string; outcome: string; reason?: string; run_id?: number};
type Row = {param: string; path: string};

// The outcome's symbol keeps it readable without colour.
const OUTCOME_SYMBOL: Record<string, string> = {accepted: '✓', duplicate: '↺', refused: '✗'};

// mappingOf is the rows as the API takes them; bad names the first row
// half filled (the server checks the rest and names it).
export function mappingOf(rows: Row[]): {params: Record<string, string>; bad: string} {
  const params: Record<string, string> = {};
  for (const [i, r] of rows.entries()) {
    const p = r.param.trim(), path = r.path.trim();
    if (!p && !path) continue;
    if (!p || !path) return {params, bad: `Mapping row ${i + 1} needs both a param name and a JSON path.`};
    params[p] = path;
  }
  return {params, bad: ''};
}

export function TriggersPanel({project, workflow}: {project: string; workflow: string}) {
  const base = `/api/v1/projects/${enc(project)}/workflows/${enc(workflow)}/triggers`;
  const [list, listErr, reload] = useList<Trigger>(base);
  const [name, setName] = useState('');
  const [rows, setRows] = useState<Row[]>([{param: '', path: ''}]);
  const [err, setErr] = useState('');
  const [busy, setBusy] = useState(false);
  const [shown, setShown] = useState<{name: string; token: string; hook: string; rotated: boolean} | null>(null);
  const [picked, setPicked] = useState('');

  async function create(e: FormEvent) {
    e.preventDefault();
    setErr('');
    const {params, bad} = mappingOf(rows);
    if (bad) { setErr(bad); return; }
    setBusy(true);
    try {
      const t = await api('POST', base, {json: {name: name.trim(), params}});
      setShown({name: t.name, token: t.token, hook: t.hook_path, rotated: false});
      setName(''); setRows([{param: '', path: ''}]); setPicked(t.name);
      reload();
    } catch (ex) { setErr(describe(ex)); } finally { setBusy(false); }
  }

  async function act(t: Trigger, what: 'rotate' | 'toggle' | 'delete') {
    const path = `${base}/${enc(t.name)}`;
    try {
      if (what === 'rotate') {
        if (!await confirmDialog(`Rotate the token of ${t.name}?`, 'The old token stops working at once; senders need the new one.', 'Rotate')) return;
        const r = await api('POST', `${path}/rotate`);
        setShown({name: r.name, token: r.token, hook: r.hook_path, rotated: true});
      } else if (what === 'toggle') {
        await api('PATCH', path, {json: {enabled: !t.enabled}});
        flash(`Trigger ${t.name} ${t.enabled ? 'disabled: its deliveries are refused' : 'enabled'}.`, 'ok');
      } else {
        if (!await confirmDialog(`Delete trigger ${t.name}?`, 'Its hook stops answering and its deliveries are deleted; runs it started stay.', 'Delete')) return;
        await api('DELETE', path);
        if (picked === t.name) setPicked('');
        if (shown?.name === t.name) setShown(null);
        flash(`Trigger ${t.name} deleted.`, 'ok');
      }
      reload();
    } catch (ex) { flash(`${t.name}: ${describe(ex)}`); }
  }

  const put = (i: number, r: Partial<Row>) => setRows(rows.map((x, j) => (j === i ? {...x, ...r} : x)));
  return (
    <section className="panel triggers" id="triggers-panel" aria-labelledby="triggers-h">
      <h2 id="triggers-h">Triggers</h2>
      <p className="hint">A webhook trigger starts a run when a system posts JSON to its hook with its token; a repeated Idempotency-Key starts no second run.</p>
      {shown ? <Token {...shown} onClose={() => setShown(null)} /> : null}
      <table className="grid" id="triggers-list">
        <thead><tr><th>Name</th><th>Params</th><th>Actions</th></tr></thead>
        <tbody>{list === null ? <tr className="empty"><td colSpan={3}>Loading…</td></tr>
          : list.length === 0 ? <tr className="empty"><td colSpan={3}>{listErr || 'No triggers.'}</td></tr>
            : list.map((t) => (
              <tr key={t.id} data-trigger={t.name} className={picked === t.name ? 'current' : ''}>
                <td><button type="button" className="link" aria-pressed={picked === t.name} title="show its deliveries"
                  onClick={() => setPicked(t.name)}>{t.name}</button>
                  <div className="sub">{t.enabled ? 'enabled' : <strong>disabled</strong>}; token {t.rotated_at ? <>rotated <Time iso={t.rotated_at} /></>
                    : <>since <Time iso={t.created_at} /></>}</div></td>
                <td><Mapping params={t.params} /></td>
                <td className="rowactions">
                  <button type="button" className="small" data-act="rotate" onClick={() => act(t, 'rotate')}>Rotate</button>
                  <button type="button" className="small" data-act="toggle" onClick={() => act(t, 'toggle')}>{t.enabled ? 'Disable' : 'Enable'}</button>
                  <button type="button" className="small danger" data-act="delete" onClick={() => act(t, 'delete')}>Delete</button>
                </td>
              </tr>))}</tbody>
      </table>
      {picked ? <Deliveries base={base} name={picked} /> : null}
      <form className="form" id="trigger-form" onSubmit={create} aria-labelledby="trigger-new-h">
        <h3 id="trigger-new-h">New trigger</h3>
        <label className="field"><span>Name</span><input id="trigger-name" name="name" required spellCheck={false} value={name}
          placeholder="e.g. on_upload" onChange={(e) => setName(e.target.value)} /></label>
        <div className="field"><span>Params</span>
          <div className="kveditor">
            <div className="kvrows" id="trigger-mapping">
              {rows.map((r, i) => (
                <div className="kvrow" key={i}>
                  <input className="k" aria-label={`param name, row ${i + 1}`} placeholder="PARAM" value={r.param} spellCheck={false}
                    onChange={(e) => put(i, {param: e.target.value})} />
                  <input className="v" aria-label={`JSON path, row ${i + 1}`} placeholder="path in the body, e.g. file.name" value={r.path} spellCheck={false}
                    onChange={(e) => put(i, {path: e.target.value})} />
                  <button type="button" className="small" title="Remove" aria-label={`Remove mapping row ${i + 1}`}
                    onClick={() => setRows(rows.filter((_, j) => j !== i))}>−</button>
                </div>))}
            </div>
            <button type="button" className="small" id="trigger-add-row" onClick={() => setRows([...rows, {param: '', path: ''}])}>+ mapping</button>
          </div>
        </div>
        <p className="hint">Each param of the run is read from the delivery's JSON body at its path; a delivery missing one is refused.</p>
        <Err text={err} />
        <div className="buttons"><button type="submit" className="primary" id="trigger-create" disabled={busy}>Create trigger</button></div>
      </form>
    </section>
  );
}

function Mapping({params}: {params: Record<string, string>}) {
  const keys = Object.keys(params).sort();
  if (!keys.length) return <span className="muted">none</span>;
  return <span className="params">{keys.map((k) => <code key={k}>{k} ← {params[k]}</code>)}</span>;
}

// Token shows a new token once, with how to send it.
function Token({name, token, hook, rotated, onClose}: {name: string; token: string; hook: string; rotated: boolean; onClose: () => void}) {
  const [copied, setCopied] = useState('');
  async function copy() {
    try {
      await navigator.clipboard.writeText(token);
      setCopied('Copied.');
    } catch {
      // No clipboard (not a secure context): select it for the user to copy.
      const el = document.getElementById('trigger-token');
      const sel = window.getSelection();
      if (el && sel) { const r = document.createRange(); r.selectNodeContents(el); sel.removeAllRanges(); sel.addRange(r); }
      setCopied('Selected: press Ctrl+C to copy.');
    }
  }
  return (
    <div className="note tokenbox" id="trigger-token-box" role="status">
      <p><strong>{rotated ? `New token of ${name}` : `Token of ${name}`}</strong>: shown only now; store it where the sender keeps secrets.
        {rotated ? ' The old token is refused from now on.' : ''}</p>
      <p><code id="trigger-token" className="token">{token}</code>{' '}
        <button type="button" className="small" id="trigger-token-copy" onClick={copy}>Copy</button>{' '}
        <span className="muted" id="trigger-token-copied">{copied}</span></p>
      <p className="hint">POST JSON to <code id="trigger-hook">{hook}</code> with <code>Authorization: Bearer &lt;token&gt;</code> and,
        to make a retry safe, an <code>Idempotency-Key</code> header.</p>
      <button type="button" className="small" id="trigger-token-close" onClick={onClose}>I have stored it</button>
    </div>
  );
}

function Deliveries({base, name}: {base: string; name: string}) {
  const [ds, err, reload] = useList<Delivery>(`${base}/${enc(name)}/deliveries?limit=50`, 2000);
  return (
    <div className="deliveries" id="trigger-deliveries">
      <h3>Deliveries of {name} <button type="button" className="small" onClick={reload}>Refresh</button></h3>
      <table className="grid">
        <thead><tr><th>Received</th><th>Key</th><th>Outcome</th><th>Run</th></tr></thead>
        <tbody>{ds === null ? <tr className="empty"><td colSpan={4}>Loading…</td></tr>
          : ds.length === 0 ? <tr className="empty"><td colSpan={4}>{err || 'No deliveries yet.'}</td></tr>
            : ds.map((d) => (
              <tr key={d.id} data-delivery={d.id} data-outcome={d.outcome} data-run={d.run_id || ''}>
                <td><Time iso={d.received_at} /></td>
                <td>{d.idempotency_key ? <code>{d.idempotency_key}</code> : <span className="muted">none</span>}</td>
                <td><span className={`outcome out-${d.outcome}`}>{OUTCOME_SYMBOL[d.outcome] || ''} {d.outcome}</span>
                  {d.reason ? <div className="reason">{d.reason}</div> : null}</td>
                <td>{d.run_id ? <a href={`#/instances/${d.run_id}`}>#{d.run_id}</a> : <span className="muted">none</span>}</td>
              </tr>))}</tbody>
      </table>
    </div>
  );
}
