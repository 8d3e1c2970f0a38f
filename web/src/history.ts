// The editor's undo stack: every change to the document is a new present,
// the old one pushed onto past; undo and redo move between them. Changes
// that carry the same tag within a short time (keys typed into one field,
// the steps of one drag) are one entry, so Ctrl+Z takes back a word or a
// move, not a letter or a pixel. Pure: unit-tested with vitest.

export interface History<T> {
  past: T[];
  present: T;
  future: T[];
  tag: string; // the tag of the last change ('' never merges)
  at: number; // when it was made (ms)
}

export const MERGE_MS = 1000;
export const LIMIT = 200;

export function start<T>(present: T): History<T> {
  return {past: [], present, future: [], tag: '', at: 0};
}

// record makes next the present. A change equal (===) to the present is
// no change. One with the tag of the last, within MERGE_MS of it, replaces
// the present without a new entry.
export function record<T>(h: History<T>, next: T, tag = '', now = 0): History<T> {
  if (next === h.present) return h;
  if (tag && tag === h.tag && now - h.at < MERGE_MS) return {...h, present: next, future: [], at: now};
  const past = [...h.past, h.present];
  if (past.length > LIMIT) past.splice(0, past.length - LIMIT);
  return {past, present: next, future: [], tag, at: now};
}

export function undo<T>(h: History<T>): History<T> {
  if (!h.past.length) return h;
  return {past: h.past.slice(0, -1), present: h.past[h.past.length - 1], future: [h.present, ...h.future], tag: '', at: 0};
}

export function redo<T>(h: History<T>): History<T> {
  if (!h.future.length) return h;
  return {past: [...h.past, h.present], present: h.future[0], future: h.future.slice(1), tag: '', at: 0};
}

export const canUndo = <T>(h: History<T>) => h.past.length > 0;
export const canRedo = <T>(h: History<T>) => h.future.length > 0;

// undoKey reads a keydown as 'undo', 'redo' or '' (Ctrl or Cmd with Z,
// Shift for redo; Ctrl+Y redoes too).
export function undoKey(e: {key: string; ctrlKey: boolean; metaKey: boolean; shiftKey: boolean; altKey: boolean}): '' | 'undo' | 'redo' {
  if (!(e.ctrlKey || e.metaKey) || e.altKey) return '';
  const k = e.key.toLowerCase();
  if (k === 'z') return e.shiftKey ? 'redo' : 'undo';
  if (k === 'y' && !e.shiftKey) return 'redo';
  return '';
}
