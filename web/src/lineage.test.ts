import {describe, expect, it} from 'vitest';
import type {DatasetEvent, DatasetFire} from './client';
import {covers, partitionState} from './lineage';

const ev = (at: string, evaluated = true): DatasetEvent => ({id: 1, dataset: 'events', partition: '2026-12-07T13', producer: 'task:1', produced_at: at, evaluated});
const fire = (at: string, outcome = 'fired'): DatasetFire => ({id: 1, workflow: 'daily', partition: '2026-12-07', event_id: 1, covered_event_id: 1,
  outcome, rerun: false, fired_at: at});

describe('covers', () => {
  it.each([
    ['2026-12-07', '2026-12-07', true],
    ['2026-12-07', '2026-12-07T13', true],
    ['2026-12-07', '2026-12-08T00', false],
    ['2026-12-07T13', '2026-12-07T13', true],
    ['2026-12-07T13', '2026-12-07T14', false],
    ['2026-12-0', '2026-12-07T13', false],
  ])('run %s reads %s: %s', (run, key, want) => { expect(covers(run, key)).toBe(want); });
});

describe('partitionState', () => {
  it.each([
    ['no consumer, one evaluated event', [ev('2026-12-07T14:00:00Z')], [], [], 'ready'],
    ['no consumer, an event not evaluated yet', [ev('2026-12-07T14:00:00Z'), ev('2026-12-07T15:00:00Z', false)], [], [], 'waiting'],
    ['a consumer that has not run for it', [ev('2026-12-07T14:00:00Z')], ['daily'], [], 'waiting'],
    ['one of two consumers ran', [ev('2026-12-07T14:00:00Z')], ['daily', 'other'], [fire('2026-12-08T00:10:00Z')], 'waiting'],
    ['its consumer ran', [ev('2026-12-07T14:00:00Z')], ['daily'], [fire('2026-12-08T00:10:00Z')], 'ready'],
    ['produced twice before the run', [ev('2026-12-07T14:00:00Z'), ev('2026-12-07T15:00:00Z')], ['daily'], [fire('2026-12-08T00:10:00Z')], 're-produced'],
    ['produced again after the run', [ev('2026-12-07T14:00:00Z'), ev('2026-12-08T02:00:00Z')], ['daily'], [fire('2026-12-08T00:10:00Z')], 'late'],
    ['an ignored fire is no run', [ev('2026-12-07T14:00:00Z')], ['daily'], [fire('2026-12-07T10:00:00Z', 'ignored')], 'waiting'],
  ] as [string, DatasetEvent[], string[], DatasetFire[], string][])('%s', (_n, events, consumers, fires, want) => {
    expect(partitionState(events, consumers, fires)).toBe(want);
  });
});
