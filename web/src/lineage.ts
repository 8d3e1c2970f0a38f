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
// it; late when an event came after a consumer had already fired for it;
// re-produced when produced more than once; else ready.
export function partitionState(events: DatasetEvent[], fires: DatasetFire[]): PartitionState {
  if (events.some((e) => !e.evaluated)) return 'waiting';
  const first = fires.filter((f) => f.outcome === 'fired').map((f) => Date.parse(f.fired_at)).sort((a, b) => a - b)[0];
  if (first !== undefined && events.some((e) => Date.parse(e.produced_at) > first)) return 'late';
  if (events.length > 1) return 're-produced';
  return 'ready';
}
