// The login page and the user menu. The session is the HttpOnly cookie the
// API sets on POST /api/v1/login; the page never sees the token.

import {api, describe, setUser} from './api.js';
import {h, replace} from './dom.js';

let field = 0;

function labelled(label, props) {
  const id = 'login-' + (++field);
  return h('div', {class: 'field'}, h('label', {for: id}, label), h('input', {id, ...props}));
}

// render shows the login form in main; onLogin runs with the user once
// logged in.
export function render(main, onLogin) {
  const err = h('p', {class: 'login-error', role: 'alert'});
  const user = labelled('Username', {name: 'username', autocomplete: 'username', required: true});
  const pass = labelled('Password', {name: 'password', type: 'password', autocomplete: 'current-password', required: true});
  const button = h('button', {type: 'submit', class: 'primary'}, 'Log in');
  const form = h('form', {class: 'login panel', on: {submit: async (ev) => {
    ev.preventDefault();
    err.textContent = '';
    button.disabled = true;
    try {
      await api('POST', '/api/v1/login', {json: {username: form.elements.username.value, password: form.elements.password.value}});
      const me = await api('GET', '/api/v1/me');
      onLogin(me);
    } catch (e) {
      err.textContent = describe(e);
      form.elements.password.value = '';
    } finally {
      button.disabled = false;
    }
  }}}, h('h1', {}, 'Log in to Beluga'), user, pass, h('div', {class: 'buttons'}, button), err);
  replace(main, form);
  form.elements.username.focus();
}

// menu renders the user menu in the header: a button with the user's name
// that opens a small menu with "Log out".
export function menu(slot, me, onLogout) {
  if (!me) {
    replace(slot);
    return;
  }
  const logout = h('button', {type: 'button', class: 'menu-item', on: {click: async () => {
    try {
      await api('POST', '/api/v1/logout');
    } catch { /* the session may be gone already: logged out either way */ }
    setUser('');
    onLogout();
  }}}, 'Log out');
  const pop = h('div', {class: 'user-menu', hidden: true}, h('p', {class: 'muted'}, `Signed in as ${me.username} (${me.role})`), logout);
  const button = h('button', {type: 'button', id: 'user', class: 'linkish', 'aria-haspopup': 'true', 'aria-expanded': 'false',
    on: {click: () => {
      pop.hidden = !pop.hidden;
      button.setAttribute('aria-expanded', String(!pop.hidden));
    }}}, me.username);
  replace(slot, button, pop);
}
