import {describe, expect, it} from 'vitest';
import {addLineStarts, stderrLines, viewOf} from './logstreams';

const enc = new TextEncoder();

describe('stderr lines', () => {
  // "out1\nerr1\npart err2\nout3\n": err1 and " err2" came from stderr.
  const pages = ['out1\ner', 'r1\npart err2\nout3\n'];
  const starts = [0];
  let off = 0;
  for (const p of pages) { const b = enc.encode(p); addLineStarts(starts, b, off); off += b.length; }
  const flags = stderrLines(starts, 4, [[5, 10], [14, 20]]);

  it('finds line starts across pages', () => {
    expect(starts).toEqual([0, 5, 10, 20, 25]);
  });
  it('marks the lines holding stderr bytes, a partly stderr line too', () => {
    expect(Array.from(flags)).toEqual([0, 1, 1, 0]);
  });
  it('filters by stream', () => {
    expect(viewOf(flags, 'all')).toBeNull();
    expect(viewOf(flags, 'stderr')).toEqual([1, 2]);
    expect(viewOf(flags, 'stdout')).toEqual([0, 3]);
  });
  it('counts bytes, not characters', () => {
    const s = [0];
    addLineStarts(s, enc.encode('é\nx\n'), 0);
    expect(s).toEqual([0, 3, 5]);
    expect(Array.from(stderrLines(s, 2, [[3, 5]]))).toEqual([0, 1]);
  });
  it('ignores spans past the lines loaded', () => {
    expect(Array.from(stderrLines([0, 3], 1, [[1, 2], [40, 50]]))).toEqual([1]);
  });
});
