// Time axis of the Gantt: round tick times across a span, and their labels
// in the browser's zone (pure, unit-tested).

const SEC = 1000, MIN = 60 * SEC, HOUR = 60 * MIN, DAY = 24 * HOUR;
// The steps a tick may be apart: round numbers a person reads at a glance.
const STEPS = [1, 2, 5, 10, 20, 50, 100, 200, 500, SEC, 2 * SEC, 5 * SEC, 10 * SEC, 15 * SEC, 30 * SEC, MIN, 2 * MIN, 5 * MIN, 10 * MIN, 15 * MIN, 30 * MIN,
  HOUR, 2 * HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR, DAY, 2 * DAY, 7 * DAY];

// ticks are the times from lo to hi (ms) at the smallest round step that
// gives at most max ticks, and the step. Steps under a day fall on whole
// multiples of the step since the epoch (in UTC; zones differ by whole
// quarter hours, so minute steps read round in any zone).
export function ticks(lo: number, hi: number, max = 8): {step: number; at: number[]} {
  if (!(hi > lo) || max < 1) return {step: 0, at: []};
  const step = STEPS.find((s) => (hi - lo) / s <= max) ?? Math.ceil((hi - lo) / max / DAY) * DAY;
  const at: number[] = [];
  for (let x = Math.ceil(lo / step) * step; x <= hi; x += step) at.push(x);
  return {step, at};
}

// tickLabel is the label of tick time x for ticks step apart, in zone
// (the browser's when not given): seconds, and their fractions to the digit
// the ticks differ in (a run of a tenth of a second gets ticks milliseconds
// apart), only when the step needs them; the date when the step is a day
// or more, or on the first tick and at midnight when the axis spans days.
export function tickLabel(x: number, step: number, first: boolean, spansDays: boolean, zone?: string): string {
  const d = new Date(x);
  const time = d.toLocaleTimeString('en-GB', {hour: '2-digit', minute: '2-digit', second: step < MIN ? '2-digit' : undefined,
    fractionalSecondDigits: step < 10 ? 3 : step < 100 ? 2 : step < SEC ? 1 : undefined, hour12: false, timeZone: zone});
  if (step >= DAY) return d.toLocaleDateString('en-CA', {timeZone: zone});
  if (spansDays && (first || time.startsWith('00:00'))) return d.toLocaleDateString('en-CA', {timeZone: zone}) + ' ' + time;
  return time;
}
