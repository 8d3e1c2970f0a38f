import {describe, expect, it} from 'vitest';
import {rowsOf, valuesOf} from './Params';

describe('params rows', () => {
  it('declared params are rows with their default as placeholder, sent only when typed', () => {
    const rows = rowsOf({}, {DAY: '2026-01-01', N: '3'});
    expect(rows.map((r) => [r.k, r.v, r.ph])).toEqual([['DAY', '', '2026-01-01'], ['N', '', '3']]);
    expect(valuesOf(rows)).toEqual({});
    rows[1].v = '7';
    expect(valuesOf(rows)).toEqual({N: '7'});
  });
  it('a row of its own is sent even empty; an unnamed row is not', () => {
    expect(valuesOf([{k: ' X ', v: '', ph: ''}, {k: '', v: 'lost', ph: ''}])).toEqual({X: ''});
  });
  it('given values win over the declared ones', () => {
    expect(rowsOf({N: '1'}, {N: '3'}).map((r) => [r.k, r.v])).toEqual([['N', '1']]);
  });
});
