// Small shared pieces: state badge, times with their zone, durations, and
// Why, which disables a control with its reason (title and screen reader).
import {useId, type ReactElement} from 'react';
import {localTime} from './legacy/dom.js';
import {STATE_SYMBOL, stateClass, stateLabel} from './states';

export const enc = encodeURIComponent;

export function Badge({state}: {state: string}) {
  // The symbol is drawn by CSS (data-sym), so the text stays the state.
  return <span className={'badge ' + stateClass(state)} data-sym={STATE_SYMBOL[state] ?? undefined}>{state || 'not run'}</span>;
}

const ZONE = Intl.DateTimeFormat().resolvedOptions().timeZone || 'local';

// Time shows a time in the browser's zone, the zone named on hover with UTC
// (and the schedule's zone when given).
export function Time({iso, zone}: {iso?: string | null; zone?: string}) {
  if (!iso) return <span className="muted">–</span>;
  let title = `${ZONE}\nUTC ` + new Date(iso).toISOString().replace('T', ' ').replace('.000Z', 'Z');
  if (zone) {
    try { title += `\n${zone} ` + new Date(iso).toLocaleString('sv-SE', {timeZone: zone}); } catch { /* unknown zone */ }
  }
  return <time dateTime={iso} title={title}>{localTime(iso)}</time>;
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
