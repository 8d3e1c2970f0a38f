// Time zones: the one every page shows times in (the user's, chosen in
// the header, the browser's until then), and the pure conversions between
// an instant and a wall-clock time in a named zone. Pure but for the
// setting's storage: unit-tested with vitest.

const KEY = 'beluga.zone';

export function browserZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || 'UTC';
}

// validZone says whether the browser knows the IANA zone name z.
export function validZone(z: string): boolean {
  if (!z) return false;
  try {
    new Intl.DateTimeFormat('en-US', {timeZone: z});
    return true;
  } catch {
    return false;
  }
}

function stored(): string {
  try { return globalThis.localStorage?.getItem(KEY) || ''; } catch { return ''; }
}

// userZone is the zone times are shown in: the one chosen, else the browser's.
export function userZone(): string {
  const z = stored();
  return z && validZone(z) ? z : browserZone();
}

// setUserZone stores the choice ('' goes back to the browser's zone); an
// unknown zone is refused with a message naming it.
export function setUserZone(z: string): void {
  if (z && !validZone(z)) throw new Error(`unknown time zone ${JSON.stringify(z)}: use an IANA name such as Europe/Paris`);
  if (z && z !== browserZone()) localStorage.setItem(KEY, z);
  else localStorage.removeItem(KEY);
}

// zoneNames lists the zones to choose from (the browser's list, with UTC).
export function zoneNames(): string[] {
  const list: string[] = (Intl as unknown as {supportedValuesOf?: (k: string) => string[]}).supportedValuesOf?.('timeZone') ?? [];
  return [...new Set(['UTC', browserZone(), ...list])].sort();
}

export type Wall = {y: number; mo: number; d: number; h: number; mi: number; s: number};

const fmts = new Map<string, Intl.DateTimeFormat>();
function fmt(zone: string): Intl.DateTimeFormat {
  let f = fmts.get(zone);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {timeZone: zone, hourCycle: 'h23', year: 'numeric', month: '2-digit', day: '2-digit',
      hour: '2-digit', minute: '2-digit', second: '2-digit'});
    fmts.set(zone, f);
  }
  return f;
}

// wallOf is the wall-clock time of instant ms in zone.
export function wallOf(ms: number, zone: string): Wall {
  const p: Record<string, number> = {};
  for (const x of fmt(zone).formatToParts(new Date(ms))) if (x.type !== 'literal') p[x.type] = Number(x.value);
  return {y: p.year, mo: p.month, d: p.day, h: p.hour % 24, mi: p.minute, s: p.second};
}

// offsetAt is zone's offset from UTC at instant ms, in minutes (east positive).
export function offsetAt(ms: number, zone: string): number {
  const w = wallOf(ms, zone);
  const asUTC = Date.UTC(w.y, w.mo - 1, w.d, w.h, w.mi, w.s);
  return Math.round((asUTC - Math.floor(ms / 1000) * 1000) / 60000);
}

// instantOf is the instant of wall time w in zone. A wall time skipped by a
// DST jump is read with the offset before it (as most clocks do); a
// repeated one is the first of the two.
export function instantOf(w: Wall, zone: string): number {
  const asUTC = Date.UTC(w.y, w.mo - 1, w.d, w.h, w.mi, w.s);
  const o1 = offsetAt(asUTC, zone);
  const o2 = offsetAt(asUTC - o1 * 60000, zone);
  if (o1 === o2) return asUTC - o1 * 60000;
  // Near a change: take the offset under which the wall time holds, the larger one first.
  for (const o of [Math.max(o1, o2), Math.min(o1, o2)]) {
    const t = asUTC - o * 60000;
    if (offsetAt(t, zone) === o) return t;
  }
  return asUTC - Math.min(o1, o2) * 60000;
}

function pad(n: number, w = 2) { return String(n).padStart(w, '0'); }

export function wallText(w: Wall): string {
  return `${pad(w.y, 4)}-${pad(w.mo)}-${pad(w.d)} ${pad(w.h)}:${pad(w.mi)}:${pad(w.s)}`;
}

// dayIn is the calendar day (YYYY-MM-DD) of an RFC 3339 time in zone.
export function dayIn(iso: string, zone: string): string {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return '';
  return wallText(wallOf(ms, zone)).slice(0, 10);
}

// zoneLabel is the short name of zone at instant ms ("CET", "GMT+8", "UTC").
export function zoneLabel(ms: number, zone: string): string {
  if (zone === 'UTC' || zone === 'Etc/UTC') return 'UTC';
  try {
    const p = new Intl.DateTimeFormat('en-US', {timeZone: zone, timeZoneName: 'short'}).formatToParts(new Date(ms));
    return p.find((x) => x.type === 'timeZoneName')?.value || zone;
  } catch {
    return zone;
  }
}

// formatIn is an RFC 3339 time as "YYYY-MM-DD HH:MM:SS" in zone ('' for
// none; the input itself when it is not a time).
export function formatIn(iso: string | null | undefined, zone: string): string {
  if (!iso) return '';
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return String(iso);
  return wallText(wallOf(ms, zone));
}

// inputValue is an instant as a datetime-local value in zone, to the
// second (zero seconds left out, as the browser writes the value).
export function inputValue(ms: number, zone: string): string {
  if (Number.isNaN(ms)) return '';
  const w = wallOf(ms, zone);
  return `${pad(w.y, 4)}-${pad(w.mo)}-${pad(w.d)}T${pad(w.h)}:${pad(w.mi)}` + (w.s ? `:${pad(w.s)}` : '');
}

const INPUT = /^(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2})(?::(\d{2}))?$/;

// rfc3339In reads a datetime-local value as a wall time in zone and writes
// it as RFC 3339 with that zone's offset there (Z for UTC), so a message
// quoting it reads as typed; '' for empty, null for invalid.
export function rfc3339In(v: string, zone: string): string | null {
  if (!v) return '';
  const m = INPUT.exec(v);
  if (!m) return null;
  const w: Wall = {y: +m[1], mo: +m[2], d: +m[3], h: +m[4], mi: +m[5], s: +(m[6] || 0)};
  if (w.mo < 1 || w.mo > 12 || w.d < 1 || w.d > 31 || w.h > 23 || w.mi > 59 || w.s > 59) return null;
  const ms = instantOf(w, zone);
  const back = wallOf(ms, zone);
  const off = offsetAt(ms, zone);
  const z = off === 0 ? 'Z' : `${off < 0 ? '-' : '+'}${pad(Math.floor(Math.abs(off) / 60))}:${pad(Math.abs(off) % 60)}`;
  return `${wallText(back).replace(' ', 'T')}${z}`;
}

// TimeView is how a time shows: its text in the user's zone with that
// zone's short name, the other zone's wall time and name where it differs
// (a schedule's), and a title with both and UTC.
export type TimeView = {text: string; label: string; other: string; title: string};

export function timeView(iso: string, other?: string, zone = userZone()): TimeView {
  const ms = Date.parse(iso);
  if (Number.isNaN(ms)) return {text: String(iso), label: '', other: '', title: ''};
  const text = formatIn(iso, zone);
  let title = `${text} ${zone}\n${formatIn(iso, 'UTC')} UTC`;
  let alt = '';
  if (other && validZone(other) && other !== zone) {
    const w = formatIn(iso, other);
    if (w !== text) alt = `${w} ${other}`;
    title += `\n${w} ${other} (the schedule's zone)`;
  }
  return {text, label: zoneLabel(ms, zone), other: alt, title};
}

// localInput is a Date as a datetime-local value in the user's zone (the
// inputs showing it take step 1, so a window keeps its seconds).
export function localInput(d: Date | null | undefined): string {
  return d ? inputValue(d.getTime(), userZone()) : '';
}

// rfc3339Local reads a datetime-local value in the user's zone.
export function rfc3339Local(v: string): string | null {
  return rfc3339In(v, userZone());
}
