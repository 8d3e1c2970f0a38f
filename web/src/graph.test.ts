import {describe, expect, it} from 'vitest';
import {criticalPath, depths, edgeRefusal, latestAttempts, layout, stateCounts, type SpecTask, type TaskAttempt} from './graph';

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
});
