import {describe, expect, it} from 'vitest';
import {shallowSame, stable} from './stable';

type N = {id: string; x: number; data: {label: string}};
const same = (a: N, b: N) => a.x === b.x && shallowSame(a.data, b.data);
const n = (id: string, x: number, label = id): N => ({id, x, data: {label}});

describe('stable', () => {
  it('keeps the previous list when nothing changed', () => {
    const prev = [n('a', 1), n('b', 2)];
    expect(stable(prev, [n('a', 1), n('b', 2)], same)).toBe(prev);
  });
  it('replaces only the item that changed', () => {
    const prev = [n('a', 1), n('b', 2), n('c', 3)];
    const out = stable(prev, [n('a', 1), n('b', 2, 'B'), n('c', 3)], same);
    expect(out).not.toBe(prev);
    expect(out[0]).toBe(prev[0]);
    expect(out[1]).not.toBe(prev[1]);
    expect(out[1].data.label).toBe('B');
    expect(out[2]).toBe(prev[2]);
  });
  it('makes a new list when items are added, removed or reordered', () => {
    const prev = [n('a', 1), n('b', 2)];
    const added = stable(prev, [n('a', 1), n('b', 2), n('c', 3)], same);
    expect(added).not.toBe(prev);
    expect(added[0]).toBe(prev[0]);
    expect(stable(prev, [n('a', 1)], same)).toEqual([prev[0]]);
    const swapped = stable(prev, [n('b', 2), n('a', 1)], same);
    expect(swapped).not.toBe(prev);
    expect(swapped).toEqual([prev[1], prev[0]]);
  });
  it('compares records shallowly', () => {
    expect(shallowSame({a: 1, b: 'x'}, {b: 'x', a: 1})).toBe(true);
    expect(shallowSame({a: 1}, {a: 1, b: undefined})).toBe(false);
    expect(shallowSame({a: {}}, {a: {}})).toBe(false);
  });
});
