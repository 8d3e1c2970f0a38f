import {describe, expect, it} from 'vitest';
import {tickLabel, ticks} from './timeaxis';

const T0 = Date.UTC(2026, 11, 6, 10, 0, 0);

describe('ticks', () => {
  it('picks the smallest round step giving at most max ticks, on multiples of it', () => {
    const r = ticks(T0 + 3000, T0 + 65000, 8);
    expect(r.step).toBe(10000);
    expect(r.at[0]).toBe(T0 + 10000);
    expect(r.at.at(-1)).toBe(T0 + 60000);
    expect(r.at.length).toBeLessThanOrEqual(8);
  });
  it('goes below a second for a short run', () => {
    const r = ticks(T0, T0 + 900, 8);
    expect(r.step).toBe(200);
    expect(tickLabel(r.at[1], r.step, false, false, 'UTC')).toBe('10:00:00.2');
  });
  it('goes to milliseconds for a run of a tenth of a second', () => {
    const r = ticks(T0 + 3, T0 + 103, 8);
    expect(r.step).toBe(20);
    expect(r.at.length).toBeGreaterThanOrEqual(2);
    expect(tickLabel(r.at[0], r.step, false, false, 'UTC')).toBe('10:00:00.02');
    expect(tickLabel(T0 + 7, 5, false, false, 'UTC')).toBe('10:00:00.007');
  });
  it('goes to hours and days for long spans', () => {
    expect(ticks(T0, T0 + 5 * 3600e3, 8).step).toBe(3600e3);
    expect(ticks(T0, T0 + 30 * 86400e3, 8).step).toBe(7 * 86400e3);
    expect(ticks(T0, T0 + 400 * 86400e3, 8).step).toBe(50 * 86400e3);
  });
  it('gives nothing for an empty or reversed span', () => {
    expect(ticks(T0, T0).at).toEqual([]);
    expect(ticks(T0, T0 - 1).at).toEqual([]);
  });
});

describe('tickLabel', () => {
  it('shows seconds only for steps under a minute, in the zone asked', () => {
    expect(tickLabel(T0 + 10000, 10000, false, false, 'UTC')).toBe('10:00:10');
    expect(tickLabel(T0, 5 * 60000, false, false, 'UTC')).toBe('10:00');
    expect(tickLabel(T0, 5 * 60000, false, false, 'Asia/Shanghai')).toBe('18:00');
  });
  it('dates the first tick and midnight when the axis spans days, and day steps', () => {
    expect(tickLabel(T0, 3600e3, true, true, 'UTC')).toBe('2026-12-06 10:00');
    expect(tickLabel(Date.UTC(2026, 11, 7), 3600e3, false, true, 'UTC')).toBe('2026-12-07 00:00');
    expect(tickLabel(T0 + 3600e3, 3600e3, false, true, 'UTC')).toBe('11:00');
    expect(tickLabel(T0, 86400e3, false, true, 'UTC')).toBe('2026-12-06');
  });
});
