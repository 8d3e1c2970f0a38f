// Alert channels: where workflows' alerts go (alerts.channels), each with
// a Test button that sends a test alert from the leading master and shows
// its outcome, and a form per kind (webhook, email, script) that creates
// one or replaces one picked from the list. Secrets are never shown.
import {useState, type FormEvent} from 'react';
import {describe} from './api';
import {call, type AlertChannel, type AlertChannelRequest} from './client';
import {confirmDialog, flash} from './notify';
import {Err, Field, TestButton, Time, run, useList, type Outcome} from './ui';

type Channel = AlertChannel;

const EMPTY = {name: '', kind: 'webhook', url: '', format: 'json', host: '', port: '', tls: 'starttls', username: '', from: '', to: '',
  command: '', secret: '', insecure: false};

function where(c: Channel): string {
  if (c.kind === 'webhook') return `${c.url} (${c.format || 'json'})`;
  if (c.kind === 'email') return `${(c.to || []).join(', ')} via ${c.host}${c.port ? ':' + c.port : ''}`;
  return c.command || '';
}

export function AlertChannelsPage() {
  const [items, listErr, reload] = useList<Channel>('/api/v1/alert-channels');
  const [f, setF] = useState(EMPTY);
  const [replacing, setReplacing] = useState(false);
  const [err, setErr] = useState('');
  const set = (k: keyof typeof EMPTY) => (e: React.ChangeEvent<HTMLInputElement | HTMLSelectElement | HTMLTextAreaElement>) => setF({...f, [k]: e.target.value});

  async function save(e: FormEvent) {
    e.preventDefault();
    const name = f.name.trim();
    if (!name) { setErr('Give the channel a name.'); return; }
    const body: AlertChannelRequest = {kind: f.kind};
    if (f.kind === 'webhook') Object.assign(body, {url: f.url.trim(), format: f.format, insecure_skip_verify: f.insecure || undefined});
    if (f.kind === 'email') {
      Object.assign(body, {host: f.host.trim(), tls: f.tls, username: f.username.trim() || undefined, from: f.from.trim(),
        to: f.to.split(',').map((x) => x.trim()).filter(Boolean)});
      if (f.port) body.port = Number(f.port);
    }
    if (f.kind === 'script') body.command = f.command;
    if (f.kind !== 'script' && f.secret) body.secret = f.secret;
    if (await run(() => call('PUT /api/v1/alert-channels/{name}', {name}, body), `Alert channel ${name} saved.`, setErr)) {
      setF(EMPTY); setReplacing(false); reload();
    }
  }
  async function test(name: string): Promise<Outcome> {
    const a = await call('POST /api/v1/alert-channels/{name}/test', {name});
    const ok = a.state === 'sent';
    return {ok, text: ok ? `sent (attempt ${a.attempts})` : `${a.state}${a.last_error ? ': ' + a.last_error : ''}`};
  }
  async function del(c: Channel) {
    if (!await confirmDialog(`Delete alert channel ${c.name}?`, 'Workflows naming it send no alerts through it.', 'Delete')) return;
    try { await call('DELETE /api/v1/alert-channels/{name}', {name: c.name}); flash(`Alert channel ${c.name} deleted.`, 'ok'); reload(); }
    catch (ex) { flash(`Delete ${c.name}: ${describe(ex)}`); }
  }
  function edit(c: Channel) {
    setReplacing(true); setErr('');
    setF({...EMPTY, name: c.name, kind: c.kind, url: c.url || '', format: c.format || 'json', host: c.host || '', port: c.port ? String(c.port) : '',
      tls: c.tls || 'starttls', username: c.username || '', from: c.from || '', to: (c.to || []).join(', '), command: c.command || '', insecure: !!c.insecure_skip_verify});
  }

  return (
    <div className="admin alertchannels">
      <h1>Alert channels</h1>
      <p className="hint">A workflow sends its alerts to the channels it names in <code>alerts.channels</code> (its Settings tab in the editor).</p>
      <Err text={listErr} />
      <table className="grid alertchannels">
        <thead><tr><th>Name</th><th>Kind</th><th>Where</th><th>Secret</th><th>Updated</th><th>Test</th><th></th></tr></thead>
        <tbody>{items === null ? <tr className="empty"><td colSpan={7}>Loading…</td></tr> : items.length ? items.map((c) => {
          return (
            <tr key={c.name} data-channel={c.name}>
              <td>{c.name}</td><td>{c.kind}</td><td><code>{where(c)}</code></td>
              <td>{c.secret_set ? 'set' : <span className="muted">none</span>}</td><td><Time iso={c.updated_at} /></td>
              <td className="testcell"><TestButton name={c.name} test={() => test(c.name)} busy="Sending…" /></td>
              <td className="rowactions"><button type="button" className="small" onClick={() => edit(c)}>Edit</button>
                <button type="button" className="small danger" onClick={() => del(c)}>Delete</button></td>
            </tr>
          );
        }) : <tr className="empty"><td colSpan={7}>No alert channels yet: add one below.</td></tr>}</tbody>
      </table>
      <form className="panel form" id="channel-form" onSubmit={save} aria-label={replacing ? `replace alert channel ${f.name}` : 'add an alert channel'}>
        <h2>{replacing ? `Replace ${f.name}` : 'Add an alert channel'}</h2>
        <Field id="ch-name" label="Name"><input id="ch-name" value={f.name} onChange={set('name')} readOnly={replacing} required spellCheck={false} autoComplete="off" /></Field>
        <Field id="ch-kind" label="Kind"><select id="ch-kind" value={f.kind} onChange={set('kind')}>
          <option value="webhook">webhook: POST to a URL</option><option value="email">email over SMTP</option><option value="script">script on the master</option></select></Field>
        {f.kind === 'webhook' ? <>
          <Field id="ch-url" label="URL"><input id="ch-url" value={f.url} onChange={set('url')} spellCheck={false} placeholder="https://hooks.example.com/…" /></Field>
          <Field id="ch-format" label="Format"><select id="ch-format" value={f.format} onChange={set('format')}>
            <option value="json">json: the alert</option><option value="slack">slack</option><option value="teams">teams</option></select></Field>
          <span className="field"><label><input type="checkbox" checked={f.insecure} onChange={(e) => setF({...f, insecure: e.target.checked})} /> Skip TLS verification</label></span>
        </> : null}
        {f.kind === 'email' ? <>
          <Field id="ch-host" label="SMTP host"><input id="ch-host" value={f.host} onChange={set('host')} spellCheck={false} /></Field>
          <Field id="ch-port" label="Port"><input id="ch-port" type="number" min={1} max={65535} value={f.port} onChange={set('port')} placeholder="587" /></Field>
          <Field id="ch-tls" label="TLS"><select id="ch-tls" value={f.tls} onChange={set('tls')}>
            <option value="starttls">starttls</option><option value="tls">tls</option><option value="none">none</option></select></Field>
          <Field id="ch-username" label="Username"><input id="ch-username" value={f.username} onChange={set('username')} spellCheck={false} autoComplete="off" /></Field>
          <Field id="ch-from" label="From"><input id="ch-from" value={f.from} onChange={set('from')} spellCheck={false} /></Field>
          <Field id="ch-to" label="To"><input id="ch-to" value={f.to} onChange={set('to')} spellCheck={false} placeholder="comma-separated addresses" /></Field>
        </> : null}
        {f.kind === 'script' ? (
          <Field id="ch-command" label="Command"><textarea id="ch-command" rows={3} value={f.command} onChange={set('command')} spellCheck={false}
            placeholder="run with /bin/sh; the alert as JSON on stdin" /></Field>
        ) : null}
        {f.kind !== 'script' ? <Field id="ch-secret" label={f.kind === 'email' ? 'SMTP password' : 'Signing secret'}>
          <input id="ch-secret" type="password" value={f.secret} onChange={set('secret')} autoComplete="new-password" placeholder={replacing ? 'empty: keep the stored one' : 'optional'} /></Field> : null}
        <div className="buttons"><button type="submit" className="primary" id="ch-save">{replacing ? 'Replace' : 'Add channel'}</button>
          {replacing ? <button type="button" onClick={() => { setF(EMPTY); setReplacing(false); }}>Cancel</button> : null}</div>
        <Err text={err} />
      </form>
    </div>
  );
}
