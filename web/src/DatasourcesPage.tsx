// Datasources: the connections sql tasks name (datasource: NAME), each
// with a Test button (the API server connects and runs SELECT 1), and a
// form that creates one or replaces one picked from the list. Passwords
// are never shown; leaving the field empty keeps the stored one.
import {useState, type FormEvent} from 'react';
import {describe} from './api';
import {call, type Datasource, type DatasourceRequest} from './client';
import {confirmDialog, flash} from './notify';
import {Err, Field, TestButton, Time, run, useList, type Outcome} from './ui';


const EMPTY = {name: '', type: 'mysql', host: '', port: '', database: '', user: '', password: '', params: '', projects: ''};

// paramsOf reads "k=v, k2=v2" as driver params.
function paramsOf(s: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of s.split(',').map((x) => x.trim()).filter(Boolean)) {
    const i = part.indexOf('=');
    if (i > 0) out[part.slice(0, i).trim()] = part.slice(i + 1).trim();
  }
  return out;
}

export function DatasourcesPage() {
  const [items, listErr, reload] = useList<Datasource>('/api/v1/datasources');
  const [f, setF] = useState(EMPTY);
  const [replacing, setReplacing] = useState(false);
  const [err, setErr] = useState('');
  const set = (k: keyof typeof EMPTY) => (e: React.ChangeEvent<HTMLInputElement | HTMLSelectElement>) => setF({...f, [k]: e.target.value});
  const sqlite = f.type === 'sqlite';

  async function save(e: FormEvent) {
    e.preventDefault();
    const body: DatasourceRequest = {type: f.type, database: f.database.trim(), params: paramsOf(f.params),
      projects: f.projects.split(',').map((x) => x.trim()).filter(Boolean)};
    if (!sqlite) {
      body.host = f.host.trim();
      body.user = f.user.trim();
      if (f.port) body.port = Number(f.port);
    }
    if (f.password || !replacing) body.password = f.password;
    const name = f.name.trim();
    if (!name) { setErr('Give the datasource a name.'); return; }
    if (await run(() => call('PUT /api/v1/datasources/{name}', {name}, body), `Datasource ${name} saved.`, setErr)) {
      setF(EMPTY); setReplacing(false); reload();
    }
  }
  async function test(name: string): Promise<Outcome> {
    const r = await call('POST /api/v1/datasources/{name}/test', {name});
    return {ok: r.ok, text: r.ok ? `connected, SELECT 1 in ${r.elapsed_ms} ms` : r.error || 'failed'};
  }
  async function del(d: Datasource) {
    if (!await confirmDialog(`Delete datasource ${d.name}?`, 'sql tasks naming it fail until one of that name exists again.', 'Delete')) return;
    try { await call('DELETE /api/v1/datasources/{name}', {name: d.name}); flash(`Datasource ${d.name} deleted.`, 'ok'); reload(); }
    catch (ex) { flash(`Delete ${d.name}: ${describe(ex)}`); }
  }
  function edit(d: Datasource) {
    setReplacing(true); setErr('');
    setF({name: d.name, type: d.type, host: d.host, port: d.port ? String(d.port) : '', database: d.database, user: d.user, password: '',
      params: Object.entries(d.params || {}).map(([k, v]) => `${k}=${v}`).join(', '), projects: (d.projects || []).join(', ')});
  }

  return (
    <div className="admin datasources">
      <h1>Datasources</h1>
      <p className="hint">The databases sql tasks run on: a task says <code>datasource: NAME</code>. Test connects from the API server.</p>
      <Err text={listErr} />
      <table className="grid datasources">
        <thead><tr><th>Name</th><th>Type</th><th>Where</th><th>User</th><th>Password</th><th>Used by</th><th>Projects</th><th>Updated</th><th>Test</th><th></th></tr></thead>
        <tbody>{items === null ? <tr className="empty"><td colSpan={10}>Loading…</td></tr> : items.length ? items.map((d) => {
          return (
            <tr key={d.name} data-datasource={d.name}>
              <td>{d.name}</td><td>{d.type}</td>
              <td><code>{d.type === 'sqlite' ? d.database : `${d.host}${d.port ? ':' + d.port : ''}/${d.database}`}</code></td>
              <td>{d.user}</td><td>{d.password_set ? 'set' : <span className="muted">none</span>}</td>
              <td>{d.used_by?.length ? d.used_by.join(', ') : <span className="muted">no workflow</span>}</td>
              <td>{d.projects?.length ? d.projects.join(', ') : <span className="muted">admins only</span>}</td>
              <td><Time iso={d.updated_at} /></td>
              <td className="testcell"><TestButton name={d.name} test={() => test(d.name)} /></td>
              <td className="rowactions"><button type="button" className="small" onClick={() => edit(d)}>Edit</button>
                <button type="button" className="small danger" onClick={() => del(d)}>Delete</button></td>
            </tr>
          );
        }) : <tr className="empty"><td colSpan={10}>No datasources yet: add one below.</td></tr>}</tbody>
      </table>
      <form className="panel form" id="datasource-form" onSubmit={save} aria-label={replacing ? `replace datasource ${f.name}` : 'add a datasource'}>
        <h2>{replacing ? `Replace ${f.name}` : 'Add a datasource'}</h2>
        <Field id="ds-name" label="Name"><input id="ds-name" value={f.name} onChange={set('name')} readOnly={replacing} required spellCheck={false} autoComplete="off" /></Field>
        <Field id="ds-type" label="Type"><select id="ds-type" value={f.type} onChange={set('type')}>
          <option value="mysql">mysql</option><option value="postgres">postgres</option><option value="sqlite">sqlite</option></select></Field>
        {sqlite ? null : <>
          <Field id="ds-host" label="Host"><input id="ds-host" value={f.host} onChange={set('host')} spellCheck={false} /></Field>
          <Field id="ds-port" label="Port"><input id="ds-port" type="number" min={0} max={65535} value={f.port} onChange={set('port')}
            placeholder={f.type === 'postgres' ? '5432' : '3306'} /></Field>
        </>}
        <Field id="ds-database" label={sqlite ? 'File (absolute path)' : 'Database'}><input id="ds-database" value={f.database} onChange={set('database')} spellCheck={false} /></Field>
        {sqlite ? null : <>
          <Field id="ds-user" label="User"><input id="ds-user" value={f.user} onChange={set('user')} spellCheck={false} autoComplete="off" /></Field>
          <Field id="ds-password" label="Password"><input id="ds-password" type="password" value={f.password} onChange={set('password')} autoComplete="new-password"
            placeholder={replacing ? 'empty: keep the stored one' : ''} /></Field>
        </>}
        <Field id="ds-params" label="Driver params"><input id="ds-params" value={f.params} onChange={set('params')} spellCheck={false} placeholder="sslmode=require, …" /></Field>
        <Field id="ds-projects" label="Projects"><input id="ds-projects" value={f.projects} onChange={set('projects')} spellCheck={false}
          placeholder="comma-separated; empty: admins' workflows only" /></Field>
        <div className="buttons"><button type="submit" className="primary" id="ds-save">{replacing ? 'Replace' : 'Add datasource'}</button>
          {replacing ? <button type="button" onClick={() => { setF(EMPTY); setReplacing(false); }}>Cancel</button> : null}</div>
        <Err text={err} />
      </form>
    </div>
  );
}
