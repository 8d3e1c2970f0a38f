// Users and access: users (admin), project grants (admin or the project's
// owner), the caller's personal access tokens, and the audit log (admin).
// Each form's error is the API's, shown beside the form.
import {useState, type FormEvent} from 'react';
import {api, describe} from './api';
import {flash} from './notify';
import {Err, Field, Time, enc, run, useList} from './ui';
import {rfc3339In, userZone} from './zone';

type User = {name: string; role: string; disabled: boolean; created_at: string; updated_at: string};
type Grant = {project: string; user: string; level: string; granted_by: string; created_at: string};
type Token = {id: number; name: string; expires_at: string; created_at: string; last_used_at?: string};
type Audit = {id: number; at: string; user: string; action: string; resource: string; address: string; status: number; outcome: string};

export function UsersPage() {
  const [users, listErr, reload] = useList<User>('/api/v1/users');
  const [name, setName] = useState('');
  const [pass, setPass] = useState('');
  const [role, setRole] = useState('user');
  const [err, setErr] = useState('');
  async function create(e: FormEvent) {
    e.preventDefault();
    if (await run(() => api('POST', '/api/v1/users', {json: {name, password: pass, role}}), `User ${name} created.`, setErr)) {
      setName(''); setPass(''); reload();
    }
  }
  async function patch(u: User, body: object, what: string) {
    setErr('');
    try { await api('PATCH', `/api/v1/users/${enc(u.name)}`, {json: body}); flash(`${u.name}: ${what}.`, 'ok'); reload(); }
    catch (ex) { flash(`${u.name}: ${describe(ex)}`); }
  }
  const [pwFor, setPwFor] = useState('');
  const [pw, setPw] = useState('');
  async function password(e: FormEvent, u: User) {
    e.preventDefault();
    await patch(u, {password: pw}, 'password changed, sessions and tokens revoked');
    setPwFor(''); setPw('');
  }
  return (
    <div className="admin users">
      <h1>Users</h1>
      <form className="panel form inline" id="create-user" onSubmit={create} aria-label="create a user">
        <Field id="new-user-name" label="Name"><input id="new-user-name" value={name} onChange={(e) => setName(e.target.value)} required autoComplete="off" /></Field>
        <Field id="new-user-password" label="Password"><input id="new-user-password" type="password" value={pass} onChange={(e) => setPass(e.target.value)} required autoComplete="new-password" /></Field>
        <Field id="new-user-role" label="Role"><select id="new-user-role" value={role} onChange={(e) => setRole(e.target.value)}>
          <option value="user">user</option><option value="admin">admin</option></select></Field>
        <button type="submit" className="primary">Create user</button>
        <Err text={err} />
      </form>
      <Err text={listErr} />
      <table className="grid userlist">
        <thead><tr><th>Name</th><th>Role</th><th>State</th><th>Created</th><th>Actions</th></tr></thead>
        <tbody>
          {(users || []).map((u) => (
            <tr key={u.name} data-user={u.name} data-disabled={u.disabled ? 'yes' : 'no'}>
              <td>{u.name}</td>
              <td><label className="sr-only" htmlFor={`role-${u.name}`}>Role of {u.name}</label>
                <select id={`role-${u.name}`} value={u.role} onChange={(e) => patch(u, {role: e.target.value}, `role ${e.target.value}`)}>
                  <option value="user">user</option><option value="admin">admin</option></select></td>
              <td>{u.disabled ? <span className="tag">disabled</span> : 'active'}</td>
              <td><Time iso={u.created_at} /></td>
              <td className="rowactions">
                <button type="button" className="small" data-act="disable" onClick={() => patch(u, {disabled: !u.disabled}, u.disabled ? 'enabled' : 'disabled')}>
                  {u.disabled ? 'Enable' : 'Disable'}</button>
                {pwFor === u.name
                  ? <form className="inline" onSubmit={(e) => password(e, u)}>
                      <label className="sr-only" htmlFor={`password-${u.name}`}>New password of {u.name}</label>
                      <input id={`password-${u.name}`} type="password" autoComplete="new-password" value={pw} onChange={(e) => setPw(e.target.value)} required autoFocus />
                      <button type="submit" className="small">Save password</button>
                      <button type="button" className="small" onClick={() => setPwFor('')}>Cancel</button></form>
                  : <button type="button" className="small" data-act="password" onClick={() => { setPwFor(u.name); setPw(''); }}>Set password</button>}
              </td>
            </tr>
          ))}
          {users && !users.length ? <tr className="empty"><td colSpan={5}>No users.</td></tr> : null}
        </tbody>
      </table>
    </div>
  );
}

export function GrantsPage({project}: {project?: string}) {
  const [projects] = useList<{name: string}>('/api/v1/projects');
  const p = project || (projects && projects[0]?.name) || '';
  const [grants, listErr, reload] = useList<Grant>(p ? `/api/v1/projects/${enc(p)}/grants` : null);
  const [who, setWho] = useState('');
  const [level, setLevel] = useState('view');
  const [err, setErr] = useState('');
  async function grant(e: FormEvent) {
    e.preventDefault();
    if (await run(() => api('PUT', `/api/v1/projects/${enc(p)}/grants/${enc(who)}`, {json: {level}}), `${who} has ${level} on ${p}.`, setErr)) {
      setWho(''); reload();
    }
  }
  async function revoke(g: Grant) {
    try { await api('DELETE', `/api/v1/projects/${enc(p)}/grants/${enc(g.user)}`); flash(`${g.user}'s grant on ${p} revoked.`, 'ok'); reload(); }
    catch (ex) { flash(describe(ex)); }
  }
  return (
    <div className="admin grants">
      <h1>Project grants</h1>
      <p><Field id="grant-project" label="Project">
        <select id="grant-project" value={p} onChange={(e) => { location.hash = `#/admin/grants/${enc(e.target.value)}`; }}>
          {(projects || []).map((x) => <option key={x.name} value={x.name}>{x.name}</option>)}</select></Field></p>
      {p ? <form className="panel form inline" id="grant-form" onSubmit={grant} aria-label={`grant on ${p}`}>
        <Field id="grant-user" label="User"><input id="grant-user" value={who} onChange={(e) => setWho(e.target.value)} required autoComplete="off" /></Field>
        <Field id="grant-level" label="Level"><select id="grant-level" value={level} onChange={(e) => setLevel(e.target.value)}>
          {['view', 'operate', 'edit', 'approve', 'owner'].map((l) => <option key={l} value={l}>{l}</option>)}</select></Field>
        <button type="submit" className="primary">Grant</button>
        <Err text={err} />
      </form> : null}
      <Err text={listErr} />
      <table className="grid grantlist">
        <thead><tr><th>User</th><th>Level</th><th>Granted by</th><th>Since</th><th>Actions</th></tr></thead>
        <tbody>
          {(grants || []).map((g) => (
            <tr key={g.user} data-user={g.user} data-level={g.level}>
              <td>{g.user}</td><td>{g.level}</td><td>{g.granted_by}</td><td><Time iso={g.created_at} /></td>
              <td><button type="button" className="small" onClick={() => revoke(g)}>Revoke</button></td>
            </tr>
          ))}
          {grants && !grants.length ? <tr className="empty"><td colSpan={5}>No grants on {p}.</td></tr> : null}
        </tbody>
      </table>
    </div>
  );
}

export function TokensPage() {
  const [tokens, listErr, reload] = useList<Token>('/api/v1/tokens');
  const [name, setName] = useState('');
  const [expires, setExpires] = useState('720h');
  const [password, setPassword] = useState('');
  const [secret, setSecret] = useState<{name: string; token: string} | null>(null);
  const [err, setErr] = useState('');
  // A token may outlive the session, so it is made with the password (POST
  // /login with personal_token), not with the session: a stolen session
  // cannot buy itself a longer life. A wrong password is this form's error,
  // not a log-out (fetch, not api(), whose 401 opens the login form).
  async function create(e: FormEvent) {
    e.preventDefault();
    setErr('');
    try {
      const me = await api('GET', '/api/v1/me');
      const r = await fetch('/api/v1/login', {method: 'POST', cache: 'no-store',
        headers: {'Content-Type': 'application/json', Accept: 'application/json'},
        body: JSON.stringify({username: me.username, password, personal_token: {name, expires_in: expires}})});
      const body = await r.json().catch(() => ({}));
      if (!r.ok) {
        setErr(r.status === 401 ? 'wrong password' : (body?.error?.message || body?.message || `HTTP ${r.status}`));
        return;
      }
      setSecret({name, token: body.token});
      setName(''); setPassword(''); reload();
    } catch (ex) { setErr(describe(ex)); }
  }
  async function revoke(t: Token) {
    try { await api('DELETE', `/api/v1/tokens/${t.id}`); flash(`Token ${t.name} revoked.`, 'ok'); reload(); }
    catch (ex) { flash(describe(ex)); }
  }
  return (
    <div className="admin tokens">
      <h1>Personal access tokens</h1>
      <p className="hint">For scripts and the CLI: <code>Authorization: Bearer TOKEN</code> or <code>BELUGA_TOKEN</code>.</p>
      <form className="panel form inline" id="create-token" onSubmit={create} aria-label="create a token">
        <Field id="token-name" label="Token name"><input id="token-name" value={name} onChange={(e) => setName(e.target.value)} required autoComplete="off" /></Field>
        <Field id="token-expires" label="Expires in"><input id="token-expires" value={expires} onChange={(e) => setExpires(e.target.value)} required spellCheck={false} /></Field>
        <Field id="token-password" label="Your password"><input id="token-password" type="password" value={password} onChange={(e) => setPassword(e.target.value)} required autoComplete="current-password" /></Field>
        <button type="submit" className="primary">Create token</button>
        <Err text={err} />
      </form>
      {secret ? (
        <div className="panel newtoken" role="status">
          <p>Token <b>{secret.name}</b>: copy it now, it is not shown again.</p>
          <p><code id="token-secret">{secret.token}</code></p>
          <button type="button" className="small" onClick={() => setSecret(null)}>Done</button>
        </div>) : null}
      <Err text={listErr} />
      <table className="grid tokenlist">
        <thead><tr><th>Name</th><th>Created</th><th>Expires</th><th>Last used</th><th>Actions</th></tr></thead>
        <tbody>
          {(tokens || []).map((t) => (
            <tr key={t.id} data-token={t.name}>
              <td>{t.name}</td><td><Time iso={t.created_at} /></td><td><Time iso={t.expires_at} /></td><td><Time iso={t.last_used_at} /></td>
              <td><button type="button" className="small" onClick={() => revoke(t)}>Revoke</button></td>
            </tr>
          ))}
          {tokens && !tokens.length ? <tr className="empty"><td colSpan={5}>No tokens.</td></tr> : null}
        </tbody>
      </table>
    </div>
  );
}

export function AuditPage() {
  const [f, setF] = useState({user: '', action: '', resource: '', since: '', until: ''});
  const [applied, setApplied] = useState(f);
  const q = new URLSearchParams({limit: '200'});
  for (const [k, v] of Object.entries(applied)) {
    if (!v) continue;
    // Since and Until are typed in the user's zone (zone.ts).
    q.set(k, k === 'since' || k === 'until' ? rfc3339In(v, userZone()) || v : v);
  }
  const [rows, err] = useList<Audit>('/api/v1/audit?' + q.toString());
  const set = (k: keyof typeof f) => (e: React.ChangeEvent<HTMLInputElement>) => setF({...f, [k]: e.target.value});
  return (
    <div className="admin audit">
      <h1>Audit</h1>
      <form className="panel form inline" id="audit-filters" aria-label="audit filters" onSubmit={(e) => { e.preventDefault(); setApplied(f); }}>
        <Field id="audit-user" label="User"><input id="audit-user" value={f.user} onChange={set('user')} /></Field>
        <Field id="audit-action" label="Action"><input id="audit-action" value={f.action} onChange={set('action')} placeholder="POST /api/v1/users" /></Field>
        <Field id="audit-resource" label="Resource"><input id="audit-resource" value={f.resource} onChange={set('resource')} /></Field>
        <Field id="audit-since" label={`Since (${userZone()})`}><input id="audit-since" type="datetime-local" value={f.since} onChange={set('since')} /></Field>
        <Field id="audit-until" label={`Until (${userZone()})`}><input id="audit-until" type="datetime-local" value={f.until} onChange={set('until')} /></Field>
        <button type="submit" className="primary">Filter</button>
      </form>
      <Err text={err} />
      <table className="grid auditlist">
        <thead><tr><th>At</th><th>User</th><th>Action</th><th>Resource</th><th>Address</th><th>Status</th><th>Outcome</th></tr></thead>
        <tbody>
          {(rows || []).map((a) => (
            <tr key={a.id} data-id={a.id} data-user={a.user}>
              <td><Time iso={a.at} /></td><td>{a.user}</td><td><code>{a.action}</code></td><td>{a.resource}</td>
              <td>{a.address}</td><td className="num">{a.status}</td><td>{a.outcome}</td>
            </tr>
          ))}
          {rows && !rows.length ? <tr className="empty"><td colSpan={7}>No audit entries match.</td></tr> : null}
        </tbody>
      </table>
    </div>
  );
}
