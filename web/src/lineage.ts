// Lineage decisions of the Datasets pages, pure so they are table-tested
// (lineage.test.ts): the state of a partition and the consumer runs of it.

import type {DatasetEvent, DatasetFire} from './client';

export type PartitionState = 'waiting' | 'late' | 're-produced' | 'ready';

// covers says whether a consumer's fire of run partition run (a day or an
// hour) reads dataset partition key: the same key, or an hour of its day.
export function covers(run: string, key: string): boolean {
  return run === key || key.startsWith(run + 'T');
}

// partitionState: waiting while the leader has not evaluated an event of
// it or a consumer has not run for it yet (its other inputs missing);
// late when an event came after a consumer had run for it; re-produced
// when produced more than once before; else ready. fires are the
// consumers' fires that read it.
export function partitionState(events: DatasetEvent[], consumers: string[], fires: DatasetFire[]): PartitionState {
  const fired = fires.filter((f) => f.outcome === 'fired');
  if (events.some((e) => !e.evaluated) || consumers.some((c) => !fired.some((f) => f.workflow === c))) return 'waiting';
  const first = fired.map((f) => Date.parse(f.fired_at)).sort((a, b) => a - b)[0];
  if (first !== undefined && events.some((e) => Date.parse(e.produced_at) > first)) return 'late';
  if (events.length > 1) return 're-produced';
  return 'ready';
}
