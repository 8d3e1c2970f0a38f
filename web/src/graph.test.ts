import {describe, expect, it} from 'vitest';
import {criticalPath, depths, downstreamOf, edgeRefusal, inBox, latestAttempts, layout, nearBox, nearKey, readCounts, stateCounts, step, NODE_W,
  type Pos, type SpecTask, type TaskAttempt} from './graph';

const chain = (n: number): SpecTask[] => Array.from({length: n}, (_, i) => ({name: `t${i}`, depends_on: i ? [`t${i - 1}`] : []}));

describe('edgeRefusal', () => {
  const ts: SpecTask[] = [{name: 'a'}, {name: 'b', depends_on: ['a']}, {name: 'c', depends_on: ['b']}];
  it('refuses an edge that closes a cycle, naming the path', () => {
    expect(edgeRefusal(ts, 'c', 'a')).toMatch(/cycle/);
  });
  it('refuses a self edge and a duplicate', () => {
    expect(edgeRefusal(ts, 'a', 'a')).toMatch(/itself/);
    expect(edgeRefusal(ts, 'a', 'b')).toMatch(/already depends/);
  });
  it('allows a new forward edge', () => {
    expect(edgeRefusal(ts, 'a', 'c')).toBe('');
  });
});

describe('layout', () => {
  it('puts a dependent right of its dependency (dagre and the layered layout)', () => {
    for (const n of [5, 400]) {
      const p = layout(chain(n));
      expect(p.get('t1')!.x).toBeGreaterThan(p.get('t0')!.x);
      expect(p.size).toBe(n);
    }
  });
  it('lays out 5,000 tasks and ignores a cycle', () => {
    const ts: SpecTask[] = [{name: 'start'}, ...Array.from({length: 4998}, (_, i) => ({name: `p${i}`, depends_on: ['start']})), {name: 'join', depends_on: Array.from({length: 4998}, (_, i) => `p${i}`)}];
    const p = layout(ts);
    expect(p.get('join')!.x).toBeGreaterThan(p.get('p0')!.x);
    // A wide layer wraps: it is no taller than 40 rows.
    const ys = new Set(ts.slice(1, -1).map((t) => p.get(t.name)!.y));
    expect(ys.size).toBeLessThanOrEqual(40);
    expect(depths([{name: 'a', depends_on: ['b']}, {name: 'b', depends_on: ['a']}]).size).toBe(2);
  });
});

const at = (id: number, name: string, state: string, s?: number, e?: number): TaskAttempt => ({id, name, attempt: 1, state,
  start_time: s === undefined ? undefined : new Date(s * 1000).toISOString(), end_time: e === undefined ? undefined : new Date(e * 1000).toISOString()});

describe('attempts', () => {
  it('takes the newest attempt and counts states', () => {
    const l = latestAttempts([at(1, 'a', 'failed'), at(3, 'a', 'succeeded'), at(2, 'b', 'running')]);
    expect(l.get('a')!.state).toBe('succeeded');
    const c = stateCounts(['a', 'b', 'c'], l);
    expect([c.get('succeeded'), c.get('running'), c.get('')]).toEqual([1, 1, 1]);
  });
  it('finds the critical path: the longest chain by duration', () => {
    const ts: SpecTask[] = [{name: 'a'}, {name: 'fast', depends_on: ['a']}, {name: 'slow', depends_on: ['a']}, {name: 'z', depends_on: ['fast', 'slow']}];
    const l = latestAttempts([at(1, 'a', 'succeeded', 0, 1), at(2, 'fast', 'succeeded', 1, 2), at(3, 'slow', 'succeeded', 1, 9), at(4, 'z', 'succeeded', 9, 10)]);
    expect(criticalPath(ts, l)).toEqual(['a', 'slow', 'z']);
  });
});

import {collapse, prefixOf, worstState} from './graph';

describe('collapse', () => {
  it('folds families of tasks into one node with their dependencies', () => {
    expect([prefixOf('part_17'), prefixOf('p3'), prefixOf('start'), prefixOf('x-2')]).toEqual(['part', 'p', 'start', 'x']);
    const ts: SpecTask[] = [{name: 'start'}, ...[0, 1, 2].map((i) => ({name: `p${i}`, depends_on: ['start']})), {name: 'join', depends_on: ['p0', 'p1', 'p2']}];
    const c = collapse(ts);
    expect(c.tasks).toEqual([{name: 'start', depends_on: []}, {name: 'p*', depends_on: ['start']}, {name: 'join', depends_on: ['p*']}]);
    expect(c.members.get('p*')).toEqual(['p0', 'p1', 'p2']);
    expect(worstState(['succeeded', 'running', ''])).toBe('running');
  });
  it('keeps an open group unfolded, its tasks linked to the folded groups around them', () => {
    const ts: SpecTask[] = [...[0, 1, 2].map((i) => ({name: `load_${i}`})),
      ...[0, 1, 2].map((i) => ({name: `t${i}`, depends_on: [`load_${i}`]})), {name: 'report', depends_on: ['t0', 't2']}];
    const c = collapse(ts, 3, new Set(['t*']));
    expect(c.tasks).toEqual([{name: 'load*', depends_on: []}, {name: 't0', depends_on: ['load*']}, {name: 't1', depends_on: ['load*']},
      {name: 't2', depends_on: ['load*']}, {name: 'report', depends_on: ['t0', 't2']}]);
    expect([...c.members.keys()]).toEqual(['load*']);
    // family names every grouped task's group, open or not; a lone task has none.
    expect([c.family.get('load_1'), c.family.get('t1'), c.family.get('report')]).toEqual(['load*', 't*', undefined]);
  });
});

describe('readCounts', () => {
  it('takes the read counts and calls the tasks without a row not started', () => {
    const c = readCounts(5000, {succeeded: 4000, failed: 2, running: 0});
    expect([...c.entries()].sort()).toEqual([['', 998], ['failed', 2], ['succeeded', 4000]]);
  });
  it('adds no not-started entry when every task has a row', () => {
    expect(readCounts(3, {succeeded: 3}).has('')).toBe(false);
  });
});

describe('step', () => {
  // a → b, a → c, b → d, c → d: a diamond, laid out in three columns.
  const ts: SpecTask[] = [{name: 'a'}, {name: 'b', depends_on: ['a']}, {name: 'c', depends_on: ['a']}, {name: 'd', depends_on: ['b', 'c']}];
  const pos = layout(ts);
  it('starts at the first task and follows edges both ways', () => {
    expect(step(ts, pos, '', 'ArrowRight')).toBe('a');
    expect(['b', 'c']).toContain(step(ts, pos, 'a', 'ArrowRight'));
    expect(step(ts, pos, 'b', 'ArrowRight')).toBe('d');
    expect(['b', 'c']).toContain(step(ts, pos, 'd', 'ArrowLeft'));
    expect(step(ts, pos, 'b', 'ArrowLeft')).toBe('a');
  });
  it('moves within a column and stays at its ends', () => {
    const top = pos.get('b')!.y < pos.get('c')!.y ? 'b' : 'c', bottom = top === 'b' ? 'c' : 'b';
    expect(step(ts, pos, top, 'ArrowDown')).toBe(bottom);
    expect(step(ts, pos, bottom, 'ArrowUp')).toBe(top);
    expect(step(ts, pos, top, 'ArrowUp')).toBe(top);
    expect(step(ts, pos, 'd', 'ArrowRight')).toBe('d');
    expect(step(ts, pos, 'a', 'ArrowLeft')).toBe('a');
  });
  it('Home goes to the first task', () => {
    expect(step(ts, pos, 'd', 'Home')).toBe('a');
  });
  it('downstreamOf lists the direct dependents', () => {
    expect(downstreamOf(ts, 'a').sort()).toEqual(['b', 'c']);
    expect(downstreamOf(ts, 'd')).toEqual([]);
  });
});

describe('nearKey', () => {
  it('holds the screen and a screen around it, and moves in half-screen steps', () => {
    // A 1000 x 600 box at 100 %, scrolled to (0, 0) of the plane.
    const k = nearKey([0, 0, 1], 1000, 600);
    const b = nearBox(k);
    expect(b).toEqual({x0: -1000, y0: -600, x1: 2000, y1: 1200});
    const cases: [Pos, boolean][] = [
      [{x: 10, y: 10}, true], [{x: 1990, y: 1190}, true], [{x: -1000 - NODE_W - 1, y: 0}, false],
      [{x: -1000 - NODE_W + 1, y: 0}, true], [{x: 2001, y: 0}, false], [{x: 0, y: 1201}, false],
    ];
    for (const [p, want] of cases) expect(inBox(b, p), JSON.stringify(p)).toBe(want);
    expect(inBox(b, undefined)).toBe(false);
    // A pan of less than half a screen keeps the key; more moves it.
    expect(nearKey([-499, -299, 1], 1000, 600)).toBe(k);
    expect(nearKey([-500, 0, 1], 1000, 600)).not.toBe(k);
    // Zoomed out to 50 % the same box covers twice the plane.
    expect(nearBox(nearKey([0, 0, 0.5], 1000, 600))).toEqual({x0: -2000, y0: -1200, x1: 4000, y1: 2400});
  });
});
