import {STATE_SYMBOL} from '../states';

// DOM helpers. Everything that came from the API reaches the page as text
// (textContent, attribute values), never as markup.

const PROPS = new Set(['value', 'checked', 'disabled', 'selected', 'readOnly', 'multiple', 'hidden']);

function append(el, child) {
  if (child === null || child === undefined || child === false) return;
  if (Array.isArray(child)) {
    for (const c of child) append(el, c);
  } else if (child instanceof Node) {
    el.appendChild(child);
  } else {
    el.appendChild(document.createTextNode(String(child)));
  }
}

function setProps(el, props) {
  for (const [k, v] of Object.entries(props || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k === 'class') el.setAttribute('class', Array.isArray(v) ? v.filter(Boolean).join(' ') : v);
    else if (k === 'text') el.textContent = String(v);
    else if (k === 'key') el.setAttribute('data-key', String(v));
    else if (k === 'on') {
      for (const [ev, fn] of Object.entries(v)) el.addEventListener(ev, fn);
      el._on = v; // patch moves these to the element it keeps
    }
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (PROPS.has(k)) el[k] = v;
    else el.setAttribute(k, v === true ? '' : String(v));
  }
}

// h('a', {href: '#/x', class: 'y'}, 'text', child...) builds an element.
export function h(tag, props, ...children) {
  const el = document.createElement(tag);
  setProps(el, props);
  append(el, children);
  return el;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

// s builds an SVG element.
export function s(tag, props, ...children) {
  const el = document.createElementNS(SVG_NS, tag);
  setProps(el, props);
  append(el, children);
  return el;
}

// replace swaps el's children for the given ones.
export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
  return el;
}

// ---- in-place updates ----

// Attributes the user changes (a <details> opened) or patch itself keeps.
const OWN_ATTRS = new Set(['open', 'data-refreshed']);

function keyOf(n) {
  return n.nodeType === Node.ELEMENT_NODE ? n.getAttribute('data-key') : null;
}

function sameKind(a, b) {
  return a.nodeType === b.nodeType && a.nodeName === b.nodeName && a.namespaceURI === b.namespaceURI;
}

// morph makes the kept node a look like the fresh node b.
function morph(a, b) {
  if (a.nodeType !== Node.ELEMENT_NODE) {
    if (a.nodeValue !== b.nodeValue) a.nodeValue = b.nodeValue;
    return;
  }
  // A control the user is in is theirs until they leave it.
  if (a === document.activeElement && a.matches('input, select, textarea')) return;
  for (const {name, value} of b.attributes) if (a.getAttribute(name) !== value) a.setAttribute(name, value);
  for (const {name} of [...a.attributes]) if (!b.hasAttribute(name) && !OWN_ATTRS.has(name)) a.removeAttribute(name);
  if (a._on !== b._on) {
    for (const [ev, fn] of Object.entries(a._on || {})) a.removeEventListener(ev, fn);
    for (const [ev, fn] of Object.entries(b._on || {})) a.addEventListener(ev, fn);
    a._on = b._on;
  }
  morphChildren(a, [...b.childNodes]);
}

function morphChildren(el, fresh) {
  // Drop the keyed children that are gone first, so the rest need no moves.
  const keys = new Set(fresh.map(keyOf).filter((k) => k !== null));
  const byKey = new Map();
  for (const n of [...el.childNodes]) {
    const k = keyOf(n);
    if (k === null) continue;
    if (keys.has(k) && !byKey.has(k)) byKey.set(k, n);
    else n.remove();
  }
  let ref = el.firstChild; // everything before ref is placed
  for (const f of fresh) {
    const k = keyOf(f);
    const m = k !== null ? byKey.get(k) : ref && keyOf(ref) === null ? ref : null;
    byKey.delete(k);
    if (!m || !sameKind(m, f)) {
      el.insertBefore(f, ref);
      continue;
    }
    if (m === ref) ref = ref.nextSibling;
    else el.insertBefore(m, ref);
    morph(m, f);
  }
  while (ref) {
    const next = ref.nextSibling;
    ref.remove();
    ref = next;
  }
}

// patch is replace for what a poll refreshes: it turns el's children into
// the given ones but keeps each node that is still there, changing only
// the text and attributes that differ, so a refresh does not lose the
// element under the pointer, the text selection or the focus. A child with
// a key (h's key prop) takes the place of the old child with that key,
// wherever it was, so rows keep their elements as others come and go;
// other children match the old child in their place when of the same tag.
// A kept element also takes the fresh one's listeners (those set with h's
// on). Form controls keep the value the user gave them. el.dataset.refreshed
// counts the patches, so a test can tell a refresh has landed.
export function patch(el, ...children) {
  const frag = document.createDocumentFragment();
  append(frag, children);
  morphChildren(el, [...frag.childNodes]);
  el.dataset.refreshed = String((Number(el.dataset.refreshed) || 0) + 1);
  return el;
}

// ---- time ----

function pad(n, w = 2) { return String(n).padStart(w, '0'); }

// localTime formats an RFC 3339 time in the browser's zone.
export function localTime(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return String(iso);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
    `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

// localMinute is a Date as YYYY-MM-DDTHH:MM in the browser's zone.
function localMinute(d) {
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())}T${pad(d.getHours())}:${pad(d.getMinutes())}`;
}

// localInput is a Date as a datetime-local input value, in the browser's
// zone, to the second (inputs showing it take step: 1, so a schedule's
// window keeps its seconds through an edit). Zero seconds are left out, as
// the browser itself writes the value.
export function localInput(d) {
  if (!d || Number.isNaN(d.getTime())) return '';
  return localMinute(d) + (d.getSeconds() ? `:${pad(d.getSeconds())}` : '');
}

// rfc3339Local reads a datetime-local value in the browser's zone and
// writes it as RFC 3339 with that zone's offset (Z for UTC), so an API
// message quoting it reads as typed; '' for empty, null for invalid.
export function rfc3339Local(v) {
  if (!v) return '';
  const d = new Date(v);
  if (Number.isNaN(d.getTime())) return null;
  const off = -d.getTimezoneOffset();
  const zone = off === 0 ? 'Z' : `${off < 0 ? '-' : '+'}${pad(Math.floor(Math.abs(off) / 60))}:${pad(Math.abs(off) % 60)}`;
  return `${localMinute(d)}:${pad(d.getSeconds())}${zone}`;
}

// timeEl shows a time in local time with UTC (and an extra zone) on hover.
export function timeEl(iso, zone) {
  if (!iso) return h('span', {class: 'muted'}, '–');
  let title = 'UTC ' + new Date(iso).toISOString().replace('T', ' ').replace('.000Z', 'Z');
  if (zone) {
    try {
      title += `\n${zone} ` + new Date(iso).toLocaleString('sv-SE', {timeZone: zone});
    } catch { /* an unknown zone only loses the extra line */ }
  }
  return h('time', {datetime: iso, title}, localTime(iso));
}

// duration is the time from start to end (or now) as "1h 02m", "3m 05s", "4.2s".
export function duration(start, end) {
  if (!start) return '';
  const ms = (end ? new Date(end) : new Date()) - new Date(start);
  if (!(ms >= 0)) return '';
  if (ms < 10000) return (ms / 1000).toFixed(1) + 's';
  const sec = Math.floor(ms / 1000);
  if (sec < 60) return sec + 's';
  const d = Math.floor(sec / 86400), hh = Math.floor(sec / 3600) % 24, m = Math.floor(sec / 60) % 60, ss = sec % 60;
  if (d) return `${d}d ${pad(hh)}h`;
  if (hh) return `${hh}h ${pad(m)}m`;
  return `${m}m ${pad(ss)}s`;
}

// ---- states ----

const FINISHED_WORKFLOW = new Set(['paused', 'stopped', 'failed', 'succeeded']);
const FINISHED_TASK = new Set(['succeeded', 'failed', 'killed', 'forced_success', 'paused', 'need_fault_tolerance', 'skipped']);

// TASK_STATES is the DAG's legend: skipped is a branch not taken (conditions, switch), never run.
export const TASK_STATES = ['submitted', 'dispatched', 'delayed', 'running', 'succeeded', 'forced_success', 'failed', 'killed',
  'paused', 'need_fault_tolerance', 'skipped'];

export const WORKFLOW_STATES = ['submitted', 'running', 'ready_pause', 'paused', 'ready_stop', 'stopped', 'failed', 'succeeded'];
export const PRIORITIES = ['highest', 'high', 'medium', 'low', 'lowest'];

export function workflowFinished(state) { return FINISHED_WORKFLOW.has(state); }
export function taskFinished(state) { return FINISHED_TASK.has(state); }

// badge is a coloured state label; the colour class is st-<state>.
// Its symbol (data-sym, drawn by CSS) tells the state without colour.
export function badge(state) {
  return h('span', {class: ['badge', 'st-' + (state || 'none')], 'data-sym': STATE_SYMBOL[state || '']}, state || 'not run');
}

// ---- small bits ----

let pending = [];

// go navigates to a hash route, re-rendering when it is the current one;
// a message given is shown on the new page.
export function go(hash, message, kind = 'ok') {
  if (message) pending.push([message, kind]);
  if (location.hash === hash) window.dispatchEvent(new HashChangeEvent('hashchange'));
  else location.hash = hash;
}

export function link(href, text, props) {
  return h('a', {...props, href}, text);
}

export function enc(name) { return encodeURIComponent(name); }

export function workflowHref(project, workflow) {
  return `#/workflows/${enc(project)}/${enc(workflow)}`;
}

export function paramsText(params) {
  const keys = Object.keys(params || {}).sort();
  if (!keys.length) return h('span', {class: 'muted'}, 'none');
  return h('span', {class: 'params'}, keys.map((k) => h('code', {}, `${k}=${params[k]}`)));
}

// kv renders a definition list from [label, value] pairs; null values are left out.
export function kv(pairs) {
  const dl = h('dl', {class: 'kv'});
  for (const [label, value] of pairs) {
    if (value === null || value === undefined) continue;
    dl.append(h('dt', {}, label), h('dd', {}, value === '' ? h('span', {class: 'muted'}, '–') : value));
  }
  return dl;
}

// table builds a table with a header row and a tbody to fill later.
export function table(headers, cls) {
  const tbody = h('tbody');
  const t = h('table', {class: ['grid', cls]},
    h('thead', {}, h('tr', {}, headers.map((x) => h('th', {}, x)))), tbody);
  return {table: t, tbody};
}

export function emptyRow(cols, text) {
  return h('tr', {class: 'empty'}, h('td', {colspan: cols}, text));
}

// ---- flash messages ----

// STOP_POLL, returned by a page's poll function, stops that poll until
// the page calls its refresh function again (see Page.poll in app.js).
export const STOP_POLL = Symbol('stop polling');

// allow enables button, or disables it (the attribute, so it cannot be
// clicked) with why: shown on hover (title) and read out by screen readers
// (aria-describedby, a visually hidden note after the button).
let whySeq = 0;
export function allow(button, why) {
  button.disabled = !!why;
  button.title = why || '';
  if (!button.belugaWhy && button.parentNode) {
    button.belugaWhy = h('span', {class: 'sr-only', id: 'why-' + (++whySeq)});
    button.after(button.belugaWhy);
  }
  if (button.belugaWhy) button.belugaWhy.textContent = why || '';
  if (why && button.belugaWhy) button.setAttribute('aria-describedby', button.belugaWhy.id);
  else button.removeAttribute('aria-describedby');
}

const flashes = new Map();

// flash shows a message under the nav. Errors stay until dismissed (or the
// same key is cleared); others fade after a few seconds. A key replaces an
// earlier message with the same key, so a failing poll shows one line.
export function flash(message, kind = 'error', key = null) {
  const box = document.getElementById('flash');
  if (key && flashes.has(key)) flashes.get(key).remove();
  const el = h('div', {class: ['flash', kind], role: kind === 'error' ? 'alert' : 'status'},
    h('span', {class: 'msg'}, message),
    h('button', {type: 'button', class: 'close', title: 'Dismiss', on: {click: () => drop()}}, '×'));
  function drop() {
    el.remove();
    if (key && flashes.get(key) === el) flashes.delete(key);
  }
  if (key) flashes.set(key, el);
  box.append(el);
  if (kind !== 'error') setTimeout(drop, 6000);
  return el;
}

export function unflash(key) {
  const el = flashes.get(key);
  if (el) {
    el.remove();
    flashes.delete(key);
  }
}

// clearFlashes drops every message on navigation, and shows the ones
// passed to go.
export function clearFlashes() {
  document.getElementById('flash').replaceChildren();
  flashes.clear();
  for (const [message, kind] of pending) flash(message, kind);
  pending = [];
}

// ---- dialogs ----

function dialog(title, body, okLabel, danger) {
  return new Promise((resolve) => {
    const dlg = h('dialog', {class: 'dialog'});
    const form = h('form', {method: 'dialog'},
      h('h3', {}, title), body,
      h('div', {class: 'buttons'},
        h('button', {type: 'button', class: 'cancel', on: {click: () => dlg.close('cancel')}}, 'Cancel'),
        h('button', {type: 'submit', value: 'ok', class: ['ok', danger ? 'danger' : 'primary']}, okLabel)));
    dlg.append(form);
    dlg.addEventListener('close', () => {
      dlg.remove();
      resolve(dlg.returnValue === 'ok' ? form : null);
    });
    document.body.append(dlg);
    dlg.showModal();
    (form.querySelector('input, select, textarea') || form.querySelector('button.ok')).focus();
  });
}

// confirmDialog asks before a change; resolves true when confirmed.
export async function confirmDialog(title, text, okLabel = 'Confirm', danger = true) {
  return (await dialog(title, h('p', {}, text), okLabel, danger)) !== null;
}

// formDialog asks for a few values; fields: [{name, label, type, value, min, max}].
export async function formDialog(title, fields, okLabel = 'Save') {
  const body = h('div', {class: 'fields'}, fields.map((f) =>
    h('label', {}, h('span', {}, f.label),
      h('input', {name: f.name, type: f.type || 'text', value: f.value ?? '', min: f.min, max: f.max, required: f.required}))));
  const form = await dialog(title, body, okLabel, false);
  if (!form) return null;
  const out = {};
  for (const f of fields) out[f.name] = form.elements[f.name].value;
  return out;
}

// kvEditor is a list of key=value rows with add/remove; get() returns an object.
export function kvEditor(initial, placeholders = {}) {
  const rows = h('div', {class: 'kvrows'});
  function row(k = '', v = '', ph = '') {
    const r = h('div', {class: 'kvrow'},
      h('input', {class: 'k', 'aria-label': 'param name', placeholder: 'NAME', value: k, spellcheck: 'false'}),
      h('input', {class: 'v', 'aria-label': 'param value' + (k ? ' of ' + k : ''), placeholder: ph || 'value', value: v, spellcheck: 'false'}),
      h('button', {type: 'button', class: 'small', title: 'Remove', on: {click: () => r.remove()}}, '−'));
    rows.append(r);
  }
  for (const [k, v] of Object.entries(initial || {})) row(k, v);
  for (const [k, ph] of Object.entries(placeholders)) if (!(k in (initial || {}))) row(k, '', ph);
  const el = h('div', {class: 'kveditor'}, rows,
    h('button', {type: 'button', class: 'small', on: {click: () => row()}}, '+ param'));
  return {
    el,
    // get returns the rows with a name; a placeholder row left empty is left out.
    get() {
      const out = {};
      for (const r of rows.children) {
        const k = r.querySelector('.k').value.trim();
        const v = r.querySelector('.v').value;
        if (k && (v !== '' || !(k in placeholders))) out[k] = v;
      }
      return out;
    },
  };
}

// select builds a <select> from [value, label] pairs (or plain values).
// Without a label of its own it is named for its field (axe: select-name).
export function select(name, options, value, props) {
  const label = name.replace(/_/g, ' ').replace(/^./, (c) => c.toUpperCase());
  return h('select', {name, 'aria-label': label, ...props}, options.map((o) => {
    const [v, l] = Array.isArray(o) ? o : [o, o];
    return h('option', {value: v, selected: v === value}, l);
  }));
}
