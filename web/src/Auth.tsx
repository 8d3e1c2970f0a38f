// Login: when the API answers 401 the login form covers the page; a
// logged-in user gets a menu with Log out. An API without /api/v1/me (404)
// has no users: nothing is shown. Until a user is logged in the navigation
// is hidden; the admin pages' entries show for admins only.
import {useEffect, useState} from 'react';
import {api, describe} from './api';

export type Me = {username: string; role: string};

// showNav hides the navigation and the page before login and shows each entry to whom
// it is for (data-admin: admins; data-user: any logged-in user).
function showNav(me: Me | null, need: boolean) {
  const nav = document.getElementById('nav');
  if (nav) nav.hidden = need;
  // The page behind the login form holds only the 401s its reads met:
  // hidden, so they do not flash behind the form (it is drawn again once
  // logged in).
  for (const id of ['main', 'flash']) { const el = document.getElementById(id); if (el) el.hidden = need; }
  for (const a of document.querySelectorAll<HTMLElement>('#nav [data-admin]')) a.hidden = !me || me.role !== 'admin';
  for (const a of document.querySelectorAll<HTMLElement>('#nav [data-user]')) a.hidden = !me;
}

export function Auth() {
  const [me, setMe] = useState<Me | null>(null);
  const [need, setNeed] = useState(false);
  const [open, setOpen] = useState(false);
  const [known, setKnown] = useState(false);
  useEffect(() => {
    const on = () => setNeed(true);
    window.addEventListener('beluga:unauthorized', on);
    fetch('/api/v1/me', {headers: {Accept: 'application/json'}, cache: 'no-store'}).then(async (r) => {
      if (r.status === 401) setNeed(true);
      else if (r.ok) setMe(await r.json());
    }).catch(() => {}).finally(() => setKnown(true));
    return () => window.removeEventListener('beluga:unauthorized', on);
  }, []);
  useEffect(() => {
    showNav(me, need);
    // The page is drawn only once the header is final: an admin's extra
    // entries and the user menu wrap the header to a second row, and a
    // page shown before that moved under the pointer (a press aimed at one
    // palette entry landed on the one above it).
    if (known) document.body.classList.remove('settling');
  }, [me, need, known]);
  async function logout() {
    try { await api('POST', '/api/v1/logout', {json: {}}); } catch { /* the session is gone either way */ }
    setMe(null); setOpen(false); setNeed(true);
  }
  return (
    <>
      {me ? (
        <span className="usermenu">
          <button type="button" className="linkish" id="user-menu" aria-expanded={open} onClick={() => setOpen(!open)}>{me.username}</button>
          {open ? <span className="menu"><span className="muted">{me.role}</span>
            <a href="#/tokens" onClick={() => setOpen(false)}>Access tokens</a>
            <button type="button" id="logout" onClick={logout}>Log out</button></span> : null}
        </span>
      ) : null}
      {need ? <Login onDone={(m) => { setMe(m); setNeed(false); window.dispatchEvent(new HashChangeEvent('hashchange')); }} /> : null}
    </>
  );
}

function Login({onDone}: {onDone: (m: Me) => void}) {
  const [u, setU] = useState('');
  const [p, setP] = useState('');
  const [err, setErr] = useState('');
  async function submit(e: React.FormEvent) {
    e.preventDefault();
    setErr('');
    try {
      await api('POST', '/api/v1/login', {json: {username: u, password: p}});
      let me: Me = {username: u, role: ''};
      try { me = await api('GET', '/api/v1/me'); } catch { /* keep the name typed */ }
      onDone(me);
    } catch (ex) {
      setErr(describe(ex));
      setP(''); // a failed password is typed again, not edited
    }
  }
  return (
    <div className="loginwrap" role="dialog" aria-modal="true" aria-labelledby="login-title">
      <form className="login panel form" onSubmit={submit}>
        <h1 id="login-title">Log in to Beluga</h1>
        <div className="field"><label htmlFor="login-username">Username</label><input id="login-username" autoComplete="username" value={u} onChange={(e) => setU(e.target.value)} required autoFocus /></div>
        <div className="field"><label htmlFor="login-password">Password</label><input id="login-password" type="password" autoComplete="current-password" value={p} onChange={(e) => setP(e.target.value)} required /></div>
        {err ? <p className="apierror login-error" role="alert">{err}</p> : null}
        <div className="buttons"><button type="submit" className="primary">Log in</button></div>
        <p className="hint" id="login-first">First time here? The first start of Beluga made the user <code>admin</code>; its
          password is in the file <code>admin-password</code> of the data directory (e.g. <code>beluga-data/admin-password</code>),
          unless it was set with <code>BELUGA_ADMIN_PASSWORD</code>. Once in, Users (admins) makes accounts for the others.</p>
      </form>
    </div>
  );
}
