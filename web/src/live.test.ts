import {describe, expect, it} from 'vitest';
import {applyEvents, mergeRows, type LiveDetail, type StreamEvent} from './live';

const base = (): LiveDetail => ({state: 'running', run_times: 1, tasks: [
  {id: 1, name: 'a', attempt: 1, state: 'succeeded', host: 'w1', end_time: '2026-01-01T00:00:01Z'},
  {id: 2, name: 'b', attempt: 1, state: 'submitted'},
]});
const ev = (e: Partial<StreamEvent>): StreamEvent => ({id: 1, time: '2026-01-01T00:00:05Z', kind: 'task', instance_id: 9, state: '', attempt: 1, ...e});

describe('applyEvents', () => {
  it('moves a known attempt in place, with its times, and leaves the input alone', () => {
    const d = base();
    const r = applyEvents(d, [ev({task_instance_id: 2, task_name: 'b', state: 'running'}),
      ev({id: 2, time: '2026-01-01T00:00:07Z', task_instance_id: 2, task_name: 'b', state: 'succeeded'})]);
    expect(r.detail.tasks[1]).toMatchObject({id: 2, state: 'succeeded', start_time: '2026-01-01T00:00:05Z', end_time: '2026-01-01T00:00:07Z'});
    expect(r.detail.tasks[0]).toBe(d.tasks[0]);
    expect(d.tasks[1].state).toBe('submitted');
    expect(r.dirty).toEqual([2]);
    expect(r.instance).toBe(false);
  });
  it('adds a new attempt and supersedes the earlier one', () => {
    const r = applyEvents(base(), [ev({task_instance_id: 3, task_name: 'a', attempt: 2, state: 'submitted'})]);
    expect(r.detail.tasks.map((t) => [t.id, t.attempt, t.state, !!t.superseded])).toEqual([
      [1, 1, 'succeeded', true], [2, 1, 'submitted', false], [3, 2, 'submitted', false]]);
    expect(r.dirty).toEqual([3]);
  });
  it('sets the instance state and its end', () => {
    const r = applyEvents(base(), [ev({kind: 'instance', state: 'succeeded', attempt: 1})]);
    expect(r.detail.state).toBe('succeeded');
    expect(r.detail.end_time).toBe('2026-01-01T00:00:05Z');
    expect(r.instance).toBe(true);
  });
  it('ignores other kinds', () => {
    const d = base();
    const r = applyEvents(d, [ev({kind: 'timeout', task_instance_id: 2, state: 'warning'})]);
    expect(r.detail).toBe(d);
  });
});

describe('mergeRows', () => {
  it('replaces rows by id, adds new ones in id order', () => {
    const d = mergeRows(base(), [{id: 4, name: 'c', attempt: 1, state: 'running'}, {id: 2, name: 'b', attempt: 1, state: 'running', host: 'w2'}]);
    expect(d.tasks.map((t) => [t.id, t.state, t.host])).toEqual([[1, 'succeeded', 'w1'], [2, 'running', 'w2'], [4, 'running', undefined]]);
  });
  it('keeps the state an event gave since the row was asked for', () => {
    const after = applyEvents(base(), [ev({task_instance_id: 2, task_name: 'b', state: 'succeeded'})]).detail;
    const d = mergeRows(after, [{id: 2, name: 'b', attempt: 1, state: 'running', host: 'w2'}], new Set([2]));
    expect(d.tasks[1]).toMatchObject({state: 'succeeded', host: 'w2', end_time: '2026-01-01T00:00:05Z'});
  });
});
