// Beluga web UI: a hash router over a few pages. Each page gets the main
// element and a Page that owns its timers and requests; navigating away
// closes the Page, which stops its polls and aborts what is in flight.

import {describe, isAbort} from './api.js';
import {STOP_POLL, clearFlashes, flash, h, replace, unflash} from './dom.js';
import * as instances from './instances.js';
import * as workflows from './workflows.js';
import * as workflow from './workflow.js';
import * as schedules from './schedules.js';
import * as backfills from './backfills.js';
import * as cluster from './cluster.js';

// Refresh is how often visible pages poll the API.
export const REFRESH_MS = 2000;
// A followed page (Page.follow) reads again this long after an event (a
// burst is one read) and, without events, this often as a safety net.
const FOLLOW_MS = 150;
const SAFETY_MS = 30000;

const routes = [
  [/^\/instances$/, 'instances', instances.render],
  [/^\/workflows$/, 'workflows', workflows.render],
  [/^\/workflows\/([^/]+)$/, 'workflows', workflows.render],
  [/^\/workflows\/([^/]+)\/([^/]+)$/, 'workflows', workflow.render],
  [/^\/schedules$/, 'schedules', schedules.render],
  [/^\/backfills$/, 'backfills', backfills.render],
  [/^\/backfills\/(\d+)$/, 'backfills', backfills.renderOne],
  [/^\/cluster$/, 'cluster', cluster.render],
];

let pollSeq = 0;

// Page is the life of one rendered route.
class Page {
  constructor() {
    this.alive = true;
    this.ctrl = new AbortController();
    this.polls = new Set();
    // confirmLeave, set by a page holding unsaved input, returns the
    // question to ask before leaving it, or '' when nothing would be lost.
    this.confirmLeave = null;
    this.cleanups = [];
  }

  // onClose runs fn when the page is left (a React root unmounts there).
  onClose(fn) { this.cleanups.push(fn); }

  get signal() { return this.ctrl.signal; }

  // poll runs fn now and then every ms while the tab is visible, never two
  // at once. A failure shows once (replacing the last one) and clears on
  // the next success. fn returning STOP_POLL, or failing with a 404 (what
  // it reads is gone: asking again cannot help), stops the poll, wakes
  // included. It returns a function that runs fn again now, restarting a
  // stopped poll.
  poll(fn, ms = REFRESH_MS) {
    const key = 'poll' + (++pollSeq);
    const p = {timer: 0, running: false, again: false, stopped: false};
    const tick = async () => {
      clearTimeout(p.timer);
      if (!this.alive) return;
      if (p.running) {
        p.again = true;
        return;
      }
      if (document.visibilityState === 'visible') {
        p.running = true;
        try {
          p.stopped = (await fn()) === STOP_POLL;
          unflash(key);
        } catch (e) {
          if (!isAbort(e) && this.alive) flash(describe(e), 'error', key);
          p.stopped = !!e && e.status === 404;
        } finally {
          p.running = false;
        }
      }
      if (!this.alive) return;
      if (p.stopped && !p.again) return;
      if (p.again) {
        p.again = false;
        tick();
        return;
      }
      p.timer = setTimeout(tick, typeof ms === 'function' ? ms() : ms);
    };
    p.tick = tick;
    this.polls.add(p);
    tick();
    return () => {
      p.stopped = false;
      tick();
    };
  }

  // follow runs fn like poll, but while the event stream at url (GET
  // /api/v1/events?...) is open it runs fn again on its events, a burst
  // of them once, and else only every SAFETY_MS; it polls every ms only
  // while the stream is down. The read when the stream opens covers what
  // changed between the first read and the stream's start.
  follow(url, fn, ms = REFRESH_MS) {
    if (typeof EventSource === 'undefined') return this.poll(fn, ms);
    let live = false, soon = 0;
    const again = this.poll(fn, () => (live ? SAFETY_MS : ms));
    const es = new EventSource(url);
    const later = () => { if (!soon) soon = setTimeout(() => { soon = 0; if (this.alive) again(); }, FOLLOW_MS); };
    es.onopen = () => { live = true; again(); };
    es.onerror = () => {
      if (es.readyState !== EventSource.CLOSED) return; // reconnecting by itself
      live = false;
      again();
    };
    es.onmessage = later;
    for (const k of ['instance', 'task', 'timeout']) es.addEventListener(k, later);
    this.onClose(() => { es.close(); clearTimeout(soon); });
    return again;
  }

  // wake refreshes now what polls on (a tab back in view); one already
  // asking needs no second request.
  wake() {
    for (const p of this.polls) if (!p.stopped && !p.running) p.tick();
  }

  close() {
    this.alive = false;
    this.ctrl.abort();
    for (const p of this.polls) clearTimeout(p.timer);
    this.polls.clear();
    for (const fn of this.cleanups.splice(0)) fn();
  }
}

let current = null;
let shownURL = location.href; // the address of the page shown

function parseHash() {
  const raw = location.hash.replace(/^#/, '') || '/instances';
  const q = raw.indexOf('?');
  const path = q < 0 ? raw : raw.slice(0, q);
  const query = new URLSearchParams(q < 0 ? '' : raw.slice(q + 1));
  return {path, query};
}

function route() {
  shownURL = location.href;
  if (current) current.close();
  clearFlashes();
  const main = document.getElementById('main');
  const {path, query} = parseHash();
  const page = new Page();
  current = page;
  for (const [re, nav, render] of routes) {
    const m = path.match(re);
    if (!m) continue;
    let args;
    try {
      args = m.slice(1).map((x) => (x === undefined ? undefined : decodeURIComponent(x)));
    } catch {
      break;
    }
    for (const a of document.querySelectorAll('#nav a')) a.classList.toggle('active', a.dataset.nav === nav);
    replace(main);
    try {
      render(main, page, args, query);
    } catch (e) {
      flash('This page failed to render: ' + describe(e));
      throw e;
    }
    return;
  }
  replace(main, h('h1', {}, 'Not found'), h('p', {}, 'There is no page at ', h('code', {}, path), '. ',
    h('a', {href: '#/instances'}, 'Go to instances'), '.'));
}

document.addEventListener('visibilitychange', () => {
  if (document.visibilityState === 'visible' && current) current.wake();
});

// A safety net: a failure no handler caught is still shown.
window.addEventListener('unhandledrejection', (e) => {
  if (!isAbort(e.reason)) flash('Unexpected error: ' + describe(e.reason));
});

// A page with unsaved input is left only when the user says so; staying
// puts its address back without a history entry or a new hashchange (the
// entry the navigation made now holds this page's address too).
// start runs the router; extra holds the routes of the React pages, tried
// before the others.
export function start(extra) {
  routes.unshift(...extra);
  window.addEventListener('hashchange', onHash);
  route();
}

function onHash() {
  const ask = current && current.confirmLeave ? current.confirmLeave() : '';
  if (ask && !window.confirm(ask)) {
    history.replaceState(history.state, '', shownURL);
    return;
  }
  route();
}
