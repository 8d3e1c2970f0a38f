import {describe, expect, it} from 'vitest';
import {guessed, projectionBars, untilText, type Forecast} from './forecast';

const T0 = Date.UTC(2026, 11, 7, 12, 0, 0);
const iso = (ms: number) => new Date(T0 + ms).toISOString();

const f: Forecast = {
  end: iso(90000), p90_end: iso(120000), critical_path: ['b', 'c'], no_history: [], slow: [], late: false, at: iso(0),
  tasks: [
    {name: 'b', start: iso(0), end: iso(30000), running: true},
    {name: 'c', start: iso(30000), end: iso(90000), running: false},
    {name: 'd', start: iso(30000), end: iso(40000), running: false},
  ],
  tasks_total: 3,
};

describe('projectionBars', () => {
  it('draws every remaining task, the critical ones marked', () => {
    expect(projectionBars(f, new Set(), T0)).toEqual([
      {name: 'b', start: T0, end: T0 + 30000, running: true, critical: true},
      {name: 'c', start: T0 + 30000, end: T0 + 90000, running: false, critical: true},
      {name: 'd', start: T0 + 30000, end: T0 + 40000, running: false, critical: false},
    ]);
  });
  it('starts a running task now, never past its projected end', () => {
    expect(projectionBars(f, new Set(), T0 + 10000)[0]).toMatchObject({start: T0 + 10000, end: T0 + 30000});
    expect(projectionBars(f, new Set(), T0 + 50000)[0]).toMatchObject({start: T0 + 30000, end: T0 + 30000});
  });
  it('leaves out the tasks that ended since the forecast', () => {
    expect(projectionBars(f, new Set(['b']), T0).map((b) => b.name)).toEqual(['c', 'd']);
  });
  it('has nothing without a forecast or its spans', () => {
    expect(projectionBars(null, new Set(), T0)).toEqual([]);
    expect(projectionBars({...f, tasks: undefined}, new Set(), T0)).toEqual([]);
  });
});

describe('guessed', () => {
  it('names the critical tasks without history only', () => {
    expect(guessed(f)).toEqual([]);
    expect(guessed({...f, no_history: ['c', 'd']})).toEqual(['c']);
    expect(guessed({...f, no_history: ['d']})).toEqual([]);
  });
});

describe('untilText', () => {
  it('says how far the end is', () => {
    expect(untilText(T0 - 1000, T0)).toBe('any moment now');
    expect(untilText(T0 + 20000, T0)).toBe('in under a minute');
    expect(untilText(T0 + 5 * 60000 + 20000, T0)).toBe('in ~5 min');
    expect(untilText(T0 + 89 * 60000, T0)).toBe('in ~89 min');
    expect(untilText(T0 + 150 * 60000, T0)).toBe('in ~2 h 30 min');
    expect(untilText(T0 + 180 * 60000, T0)).toBe('in ~3 h');
    expect(untilText(T0 + 72 * 3600000, T0)).toBe('in ~3 days');
  });
});
