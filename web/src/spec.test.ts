import {describe, expect, it} from 'vitest';
import {cleanTask, diffLines, graphDiff, newTask, validate} from './spec';

describe('validate', () => {
  it('names the bad field of each task', () => {
    const p = validate([
      {name: 'h', type: 'http', url: 'ftp://x'},
      {name: 's', type: 'sql', datasource: '', sql: ''},
      {name: 'ok', command: 'echo'},
      {name: 'ok', command: 'echo'},
      {name: 'c', type: 'conditions', on_success: ['nope']},
      {name: 't', command: 'x', timeout: '10 minutes'},
    ]);
    expect(p.get('h')!.url).toMatch(/http/);
    expect(p.get('s')!.datasource).toMatch(/required/);
    expect(p.get('s')!.sql).toMatch(/required/);
    expect(p.get('ok')!.name).toMatch(/twice/);
    expect(p.get('c')!.on_success).toMatch(/nope/);
    expect(p.get('t')!.timeout).toMatch(/duration/);
  });
  it('passes a good http task', () => {
    expect(validate([{name: 'h', type: 'http', url: 'http://127.0.0.1/x'}]).size).toBe(0);
  });
});

describe('tasks', () => {
  it('gives a new task a free name and drops empty fields', () => {
    const t = newTask('http', new Set(['http_1']));
    expect(t.name).toBe('http_2');
    expect(cleanTask({...t, url: 'http://x', headers: {}, retries: 0})).toEqual({name: 'http_2', type: 'http', method: 'GET', url: 'http://x'});
  });
});

describe('diff', () => {
  it('diffs lines and graphs', () => {
    expect(diffLines('a\nb\nc', 'a\nc\nd').map((l) => l.op + l.text)).toEqual([' a', '-b', ' c', '+d']);
    const g = graphDiff([{name: 'a'}, {name: 'b', depends_on: ['a']}], [{name: 'a'}, {name: 'c', depends_on: ['a']}]);
    expect(g).toMatchObject({added: ['c'], removed: ['b'], edgesAdded: ['a → c'], edgesRemoved: ['a → b']});
  });
});
