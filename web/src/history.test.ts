import {describe, expect, it} from 'vitest';
import {LIMIT, MERGE_MS, canRedo, canUndo, record, redo, start, undo, undoKey} from './history';

describe('history', () => {
  it('undoes and redoes each change in order', () => {
    let h = start('a');
    h = record(h, 'b', '', 1);
    h = record(h, 'c', '', 2);
    expect(canRedo(h)).toBe(false);
    h = undo(h);
    expect(h.present).toBe('b');
    h = undo(h);
    expect(h.present).toBe('a');
    expect(canUndo(h)).toBe(false);
    expect(undo(h)).toBe(h); // nothing more to undo: unchanged
    h = redo(redo(h));
    expect(h.present).toBe('c');
    expect(redo(h)).toBe(h);
  });

  it('a new change after an undo drops what could be redone', () => {
    let h = record(record(start(1), 2, '', 1), 3, '', 2);
    h = record(undo(h), 4, '', 3);
    expect(h.present).toBe(4);
    expect(canRedo(h)).toBe(false);
    expect(undo(h).present).toBe(2);
  });

  it('keys typed into one field within a second are one entry', () => {
    let h = start('');
    h = record(h, 'h', 'field:a', 1000);
    h = record(h, 'he', 'field:a', 1200);
    h = record(h, 'hel', 'field:a', 1200 + MERGE_MS - 1);
    expect(h.past).toEqual(['']);
    // A pause, or another field, starts a new entry.
    h = record(h, 'hell', 'field:a', 1200 + 3 * MERGE_MS);
    h = record(h, 'hello', 'field:b', 1200 + 3 * MERGE_MS + 1);
    expect(h.past).toEqual(['', 'hel', 'hell']);
    expect(undo(undo(undo(h))).present).toBe('');
  });

  it('an untagged change never merges, nor does one after an undo', () => {
    const n = record(record(start(0), 1, '', 5), 2, '', 5);
    expect(n.past).toEqual([0, 1]);
    let h = record(record(start('x'), 'xy', 't', 1), 'xyz', 't', 2);
    h = record(undo(h), 'xa', 't', 3);
    expect(h.past).toEqual(['x']);
    expect(h.present).toBe('xa');
  });

  it('the same value is no change', () => {
    const v = {a: 1};
    const h = start(v);
    expect(record(h, v, '', 1)).toBe(h);
  });

  it('keeps at most LIMIT entries', () => {
    let h = start(0);
    for (let i = 1; i <= LIMIT + 10; i++) h = record(h, i, '', i);
    expect(h.past.length).toBe(LIMIT);
    expect(h.past[0]).toBe(10);
  });
});

describe('undoKey', () => {
  const k = (key: string, m: Partial<{ctrlKey: boolean; metaKey: boolean; shiftKey: boolean; altKey: boolean}> = {}) =>
    undoKey({key, ctrlKey: false, metaKey: false, shiftKey: false, altKey: false, ...m});
  it('reads Ctrl/Cmd+Z, Ctrl+Shift+Z and Ctrl+Y', () => {
    expect(k('z', {ctrlKey: true})).toBe('undo');
    expect(k('z', {metaKey: true})).toBe('undo');
    expect(k('Z', {ctrlKey: true, shiftKey: true})).toBe('redo');
    expect(k('y', {ctrlKey: true})).toBe('redo');
    expect(k('z')).toBe('');
    expect(k('z', {ctrlKey: true, altKey: true})).toBe('');
    expect(k('a', {ctrlKey: true})).toBe('');
  });
});
