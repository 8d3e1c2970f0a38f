// The hash router: each route is a React page rendered into #main with a
// Page that owns its timers, event streams and requests; navigating away
// closes the Page (its polls stop, what is in flight is aborted) and
// unmounts the page.
import {Component, Fragment, StrictMode, type ReactElement, type ReactNode} from 'react';
import {createRoot, type Root} from 'react-dom/client';
import {describe, isAbort} from './api';
import {clearFlashes, flash, unflash} from './notify';

// Refresh is how often visible pages poll the API.
export const REFRESH_MS = 2000;
// A followed page (Page.follow) reads again this long after an event (a
// burst is one read) and, without events, this often as a safety net.
const FOLLOW_MS = 150;
const SAFETY_MS = 30000;

// STOP_POLL, returned by a poll's function, stops that poll until the
// function poll returned is called again.
export const STOP_POLL = Symbol('stop polling');

let pollSeq = 0;

type Poll = {timer: number; running: boolean; again: boolean; stopped: boolean; tick: () => void};

// Page is the life of one rendered route.
export class Page {
  alive = true;
  private ctrl = new AbortController();
  private polls = new Set<Poll>();
  private cleanups: (() => void)[] = [];
  // confirmLeave, set by a page holding unsaved input, returns the
  // question to ask before leaving it, or '' when nothing would be lost.
  confirmLeave: null | (() => string) = null;

  onClose(fn: () => void) { this.cleanups.push(fn); }

  get signal(): AbortSignal { return this.ctrl.signal; }

  // poll runs fn now and then every ms while the tab is visible, never two
  // at once. A failure shows once (replacing the last one) and clears on
  // the next success. fn returning STOP_POLL, or failing with a 404 (what
  // it reads is gone: asking again cannot help), stops the poll. It
  // returns a function that runs fn again now, restarting a stopped poll.
  poll(fn: () => Promise<unknown>, ms: number | (() => number) = REFRESH_MS): () => void {
    const key = 'poll' + (++pollSeq);
    const p: Poll = {timer: 0, running: false, again: false, stopped: false, tick: () => {}};
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
          p.stopped = !!e && (e as {status?: number}).status === 404;
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
      p.timer = window.setTimeout(tick, typeof ms === 'function' ? ms() : ms);
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
  follow(url: string, fn: () => Promise<unknown>, ms = REFRESH_MS): () => void {
    if (typeof EventSource === 'undefined') return this.poll(fn, ms);
    let live = false, soon = 0;
    const again = this.poll(fn, () => (live ? SAFETY_MS : ms));
    const es = new EventSource(url);
    const later = () => { if (!soon) soon = window.setTimeout(() => { soon = 0; if (this.alive) again(); }, FOLLOW_MS); };
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

  // wake refreshes now what polls on (a tab back in view).
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

export type Route = [RegExp, string, (args: string[], page: Page, query: URLSearchParams) => ReactElement];

// Failed shows a page that threw while rendering instead of a blank one.
class Failed extends Component<{children: ReactNode}, {err: unknown}> {
  state = {err: null as unknown};
  static getDerivedStateFromError(err: unknown) { return {err}; }
  componentDidCatch(err: unknown) { flash('This page failed to render: ' + describe(err)); }
  render() {
    return this.state.err ? <p className="apierror" role="alert">This page failed to render: {describe(this.state.err)}</p> : this.props.children;
  }
}

function NotFound({path}: {path: string}) {
  return <><h1>Not found</h1><p>There is no page at <code>{path}</code>. <a href="#/instances">Go to instances</a>.</p></>;
}

function parseHash() {
  const raw = location.hash.replace(/^#/, '') || '/instances';
  const q = raw.indexOf('?');
  return {path: q < 0 ? raw : raw.slice(0, q), query: new URLSearchParams(q < 0 ? '' : raw.slice(q + 1))};
}

// start renders the route of the address now and on every hash change.
export function start(routes: Route[]): void {
  const root: Root = createRoot(document.getElementById('main')!);
  let current: Page | null = null;
  let shownURL = location.href; // the address of the page shown
  let seq = 0;

  function route() {
    shownURL = location.href;
    current?.close();
    clearFlashes();
    const {path, query} = parseHash();
    const page = new Page();
    current = page;
    let el: ReactElement = <NotFound path={path} />;
    let nav = '';
    for (const [re, n, render] of routes) {
      const m = path.match(re);
      if (!m) continue;
      let args: string[];
      try {
        args = m.slice(1).map((x) => (x === undefined ? '' : decodeURIComponent(x)));
      } catch {
        break; // a bad escape: not found
      }
      el = render(args, page, query);
      nav = n;
      break;
    }
    for (const a of document.querySelectorAll<HTMLAnchorElement>('#nav a')) a.classList.toggle('active', a.dataset.nav === nav);
    // A new key per navigation: the page before unmounts, even on the same route.
    root.render(<StrictMode><Failed key={++seq}><Fragment>{el}</Fragment></Failed></StrictMode>);
  }

  // A page with unsaved input is left only when the user says so; staying
  // puts its address back without a history entry or a new hashchange.
  window.addEventListener('hashchange', () => {
    const ask = current?.confirmLeave ? current.confirmLeave() : '';
    if (ask && !window.confirm(ask)) {
      history.replaceState(history.state, '', shownURL);
      return;
    }
    route();
  });
  document.addEventListener('visibilitychange', () => {
    if (document.visibilityState === 'visible' && current) current.wake();
  });
  // A safety net: a failure no handler caught is still shown.
  window.addEventListener('unhandledrejection', (e) => {
    if (!isAbort(e.reason)) flash('Unexpected error: ' + describe(e.reason));
  });
  route();
}
