import {describe, expect, it} from 'vitest';
import {mappingOf} from './TriggersPanel';
import {calendarLine} from './Refused';

describe('trigger mapping rows', () => {
  it('sends the filled rows trimmed and leaves out empty ones', () => {
    expect(mappingOf([{param: ' FILE ', path: ' file.name '}, {param: '', path: ''}])).toEqual({params: {FILE: 'file.name'}, bad: ''});
  });
  it('names a half-filled row and sends nothing past it', () => {
    const r = mappingOf([{param: 'A', path: 'a'}, {param: 'B', path: ''}]);
    expect(r.bad).toBe('Mapping row 2 needs both a param name and a JSON path.');
    expect(mappingOf([{param: '', path: 'x.y'}]).bad).toContain('row 1');
  });
});

describe('calendar line', () => {
  const moved = {time: '2025-12-24T09:00:00Z', outcome: 'refused_calendar', moved_to: '2025-12-25T09:00:00Z'};
  const dropped = {time: '2025-12-26T09:00:00Z', outcome: 'refused_calendar'};
  it('counts moved and dropped times under the policy', () => {
    expect(calendarLine('xmas', 'next_business_day', [moved, dropped]))
      .toBe('calendar xmas: times on days off are moved to the next business day; 1 moved, 1 dropped');
    expect(calendarLine('xmas', '', [dropped])).toBe('calendar xmas: times on days off are skipped; 0 moved, 1 dropped');
  });
  it('says when there is no calendar', () => {
    expect(calendarLine(undefined, undefined, [])).toBe('no business calendar: every cron time runs');
  });
});
