import {describe, expect, it} from 'vitest';
import {dayIn, formatIn, inputValue, instantOf, offsetAt, rfc3339In, validZone, zoneLabel} from './zone';

describe('zone', () => {
  it('formats an instant in a zone', () => {
    const cases: [string, string, string][] = [
      ['2026-12-06T18:00:00Z', 'Asia/Shanghai', '2026-12-07 02:00:00'],
      ['2026-12-06T18:00:00Z', 'America/New_York', '2026-12-06 13:00:00'],
      ['2026-07-06T18:00:00Z', 'America/New_York', '2026-07-06 14:00:00'],
      ['2026-12-06T18:00:00Z', 'UTC', '2026-12-06 18:00:00'],
      ['2026-12-06T23:30:00-05:00', 'Asia/Kolkata', '2026-12-07 10:00:00'],
      ['not a time', 'UTC', 'not a time'],
    ];
    for (const [iso, zone, want] of cases) expect(formatIn(iso, zone), `${iso} in ${zone}`).toBe(want);
    expect(formatIn('', 'UTC')).toBe('');
  });

  it('puts days in the zone', () => {
    expect(dayIn('2026-12-06T18:00:00Z', 'Asia/Shanghai')).toBe('2026-12-07');
    expect(dayIn('2026-12-07T03:00:00Z', 'America/New_York')).toBe('2026-12-06');
    expect(dayIn('2026-12-07T03:00:00Z', 'UTC')).toBe('2026-12-07');
  });

  it('knows offsets, DST included', () => {
    expect(offsetAt(Date.parse('2026-01-15T12:00:00Z'), 'America/New_York')).toBe(-300);
    expect(offsetAt(Date.parse('2026-07-15T12:00:00Z'), 'America/New_York')).toBe(-240);
    expect(offsetAt(Date.parse('2026-07-15T12:00:00Z'), 'Asia/Kathmandu')).toBe(345);
  });

  it('reads a wall time in a zone', () => {
    const cases: [string, string, string | null][] = [
      ['2026-12-07T02:00', 'Asia/Shanghai', '2026-12-07T02:00:00+08:00'],
      ['2026-12-07T02:00:05', 'America/New_York', '2026-12-07T02:00:05-05:00'],
      ['2026-07-07T02:00', 'America/New_York', '2026-07-07T02:00:00-04:00'],
      ['2026-07-07T02:00', 'UTC', '2026-07-07T02:00:00Z'],
      // 02:30 does not exist on 2026-03-08 in New York: read before the jump.
      ['2026-03-08T02:30', 'America/New_York', '2026-03-08T03:30:00-04:00'],
      ['2026-13-07T02:00', 'UTC', null],
      ['yesterday', 'UTC', null],
      ['', 'UTC', ''],
    ];
    for (const [v, zone, want] of cases) expect(rfc3339In(v, zone), `${v} in ${zone}`).toBe(want);
  });

  it('round-trips input values', () => {
    for (const zone of ['Asia/Shanghai', 'America/New_York', 'UTC', 'Australia/Lord_Howe']) {
      for (const iso of ['2026-12-06T18:00:00Z', '2026-07-01T00:00:30Z', '2026-11-01T05:30:00Z']) {
        const ms = Date.parse(iso);
        const v = inputValue(ms, zone);
        expect(Date.parse(rfc3339In(v, zone)!), `${iso} via ${v} in ${zone}`).toBe(ms);
      }
    }
    expect(inputValue(Date.parse('2026-12-06T18:00:00Z'), 'Asia/Shanghai')).toBe('2026-12-07T02:00');
  });

  it('takes the first of a repeated hour', () => {
    // 01:30 happens twice on 2026-11-01 in New York.
    expect(new Date(instantOf({y: 2026, mo: 11, d: 1, h: 1, mi: 30, s: 0}, 'America/New_York')).toISOString()).toBe('2026-11-01T05:30:00.000Z');
  });

  it('names zones', () => {
    expect(validZone('Asia/Shanghai')).toBe(true);
    expect(validZone('Mars/Olympus')).toBe(false);
    expect(validZone('')).toBe(false);
    expect(zoneLabel(Date.parse('2026-01-15T12:00:00Z'), 'America/New_York')).toBe('EST');
    expect(zoneLabel(0, 'UTC')).toBe('UTC');
  });
});
