// Small shared pieces: state badge, times with their zone, durations, and
// Why, which disables a control with its reason (title and screen reader).
import {useCallback, useEffect, useId, useState, type ReactElement, type ReactNode} from 'react';
import {describe, get} from './api';
import {flash} from './notify';
import {timeView} from './zone';
import {STATE_SYMBOL, stateClass, stateLabel} from './states';

export const enc = encodeURIComponent;

export function Badge({state}: {state: string}) {
  // The symbol is drawn by CSS (data-sym), so the text stays the state.
  return <span className={'badge ' + stateClass(state)} data-sym={STATE_SYMBOL[state] ?? undefined}>{state || 'not run'}</span>;
}

// Time shows a time in the user's zone with that zone's name, and the
// schedule's zone (zone) beside it where its wall time differs; UTC on hover.
export function Time({iso, zone}: {iso?: string | null; zone?: string}) {
  if (!iso) return <span className="muted">–</span>;
  const v = timeView(iso, zone);
  return <span className="when"><time dateTime={iso} title={v.title}>{v.text}{v.label ? <span className="tz"> {v.label}</span> : null}</time>
    {v.other ? <span className="otherzone"> ({v.other})</span> : null}</span>;
}

function pad(n: number) { return String(n).padStart(2, '0'); }

export function duration(start?: string | null, end?: string | null): string {
  if (!start) return '';
  const ms = (end ? new Date(end).getTime() : Date.now()) - new Date(start).getTime();
  if (!(ms >= 0)) return '';
  if (ms < 10000) return (ms / 1000).toFixed(1) + 's';
  const sec = Math.floor(ms / 1000);
  if (sec < 60) return sec + 's';
  const d = Math.floor(sec / 86400), hh = Math.floor(sec / 3600) % 24, m = Math.floor(sec / 60) % 60, ss = sec % 60;
  if (d) return `${d}d ${pad(hh)}h`;
  if (hh) return `${hh}h ${pad(m)}m`;
  return `${m}m ${pad(ss)}s`;
}

export function Duration({start, end}: {start?: string | null; end?: string | null}) {
  return <>{duration(start, end)}</>;
}

type Ctl = {disabled: boolean; title: string; 'aria-describedby'?: string};

// Why renders a control disabled with why (empty: enabled).
export function Why({why, children}: {why: string; children: (p: Ctl) => ReactElement}) {
  const id = useId();
  return <>{children({disabled: !!why, title: why, 'aria-describedby': why ? id : undefined})}<span className="sr-only" id={id}>{why}</span></>;
}

export {stateLabel};

// useRead reads path and reads it again on reload() and, given every,
// that often while the tab is visible; a failure is shown in place of
// what it reads (the last answer stays).
export function useRead<T>(path: string | null, every = 0): [T | null, string, () => void] {
  const [data, setData] = useState<T | null>(null);
  const [err, setErr] = useState('');
  const [n, setN] = useState(0);
  useEffect(() => {
    if (!path) { setData(null); return; }
    const ctrl = new AbortController();
    get(path, {signal: ctrl.signal}).then((r: T) => { setData(r); setErr(''); })
      .catch((e: any) => { if (e.name !== 'AbortError') setErr(describe(e)); });
    return () => ctrl.abort();
  }, [path, n]);
  useEffect(() => {
    if (!every) return;
    const t = setInterval(() => { if (document.visibilityState === 'visible') setN((x) => x + 1); }, every);
    return () => clearInterval(t);
  }, [every]);
  return [data, err, useCallback(() => setN((x) => x + 1), [])];
}

// useList is useRead of a list answer ({items}); a failure shows no rows.
export function useList<T>(path: string | null, every = 0): [T[] | null, string, () => void] {
  const [r, err, reload] = useRead<{items: T[]}>(path, every);
  return [r ? r.items || [] : err ? [] : null, err, reload];
}

// Meter is slots in use out of a capacity.
export function Meter({used, capacity}: {used: number; capacity: number}) {
  const frac = capacity > 0 ? Math.min(1, used / capacity) : 0;
  return <span className="meterbox"><meter min={0} max={1} value={frac} low={0.7} high={0.9} optimum={0} aria-label={`${used} of ${capacity} in use`} /> {used} / {capacity}</span>;
}

export function Field({id, label, children}: {id: string; label: string; children: ReactNode}) {
  return <span className="field"><label htmlFor={id}>{label}</label>{children}</span>;
}

export function Err({text}: {text: string}) {
  return text ? <p className="apierror" role="alert">{text}</p> : null;
}

// run calls fn, shows ok on success and the error in setErr otherwise.
export async function run(fn: () => Promise<unknown>, ok: string, setErr: (s: string) => void): Promise<boolean> {
  setErr('');
  try { await fn(); flash(ok, 'ok'); return true; } catch (e) { setErr(describe(e)); return false; }
}


export type Outcome = {ok: boolean; text: string};

// TestButton runs a check of one thing (a datasource's connection, an
// alert channel's delivery) and shows its outcome beside it.
export function TestButton({name, test, busy = 'Testing…'}: {name: string; test: () => Promise<Outcome>; busy?: string}) {
  const [st, setSt] = useState<Outcome | 'testing' | null>(null);
  async function start() {
    setSt('testing');
    try { setSt(await test()); } catch (e) { setSt({ok: false, text: describe(e)}); }
  }
  return <>
    <button type="button" className="small" data-test={name} disabled={st === 'testing'} onClick={start}>{st === 'testing' ? busy : 'Test'}</button>
    {st && st !== 'testing' ? <span className={st.ok ? 'testok' : 'testbad apierror'} role="status">{st.ok ? '✓ ' : '✗ '}{st.text}</span> : null}
  </>;
}
