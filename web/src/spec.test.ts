import {describe, expect, it} from 'vitest';
import {TASK_TYPES, TYPE_FIELDS, TYPE_HELP, canonical, cleanTask, cleanWorkflow, hasComments, newTask, stripDefaults, validate, validateWorkflow, check} from './spec';
import type {SpecTask} from './graph';
import {FORMS} from './TypeFields';

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

describe('check', () => {
  const big = (n: number): SpecTask[] => Array.from({length: n}, (_, i) => ({name: `t_${i}`, command: 'true', depends_on: i ? [`t_${i - 1}`] : []}));
  const entries = (m: Map<string, unknown>) => [...m.entries()];

  it('looks only at the task a key changed, and keeps the map when its problems did not change', () => {
    const ts = big(5000);
    const c0 = check(ts);
    expect(c0.looked).toBe(5000);
    const ts1 = ts.slice();
    ts1[1234] = {...ts[1234], description: 'x'};
    const c1 = check(ts1, c0);
    expect(c1.looked).toBe(1);
    expect(c1.problems).toBe(c0.problems);
    const ts2 = ts1.slice();
    ts2[1234] = {...ts1[1234], command: ''};
    const c2 = check(ts2, c1);
    expect(c2.looked).toBe(1);
    expect(c2.problems.get('t_1234')).toEqual({command: 'command is required'});
    expect(c1.problems.has('t_1234')).toBe(false); // the map before is not changed
    const c3 = check(ts2, c2);
    expect(c3.looked).toBe(0);
  });

  it('checks everything again when a name changes, or a task comes or goes', () => {
    const ts = big(10);
    const c0 = check(ts);
    const renamed = ts.map((t, i) => (i === 3 ? {...t, name: 't_9'} : t));
    const c1 = check(renamed, c0);
    expect(c1.looked).toBe(10);
    expect(c1.problems.get('t_9')!.name).toMatch(/twice/);
    expect(check(ts.slice(1), c0).looked).toBe(9);
  });

  it('agrees with a whole check after any series of edits', () => {
    // A fixed pseudo-random series (no Math.random: the test is the same every run).
    let seed = 7;
    const rnd = (n: number) => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n; };
    let ts: SpecTask[] = [...big(30), {name: 'c', type: 'conditions', depends_on: ['t_1'], on_success: ['t_2']}, {name: 'dup', command: 'x'}, {name: 'dup', command: 'y'}];
    let c = check(ts);
    const edits: ((t: SpecTask) => SpecTask)[] = [
      (t) => ({...t, command: ''}), (t) => ({...t, command: 'echo'}), (t) => ({...t, timeout: 'soon'}), (t) => ({...t, timeout: '5m'}),
      (t) => ({...t, retries: -1}), (t) => ({...t, retries: 2}), (t) => ({...t, type: 'http', url: 'ftp://x'}), (t) => ({...t, name: t.name + 'x'}),
      (t) => ({...t, name: 'dup'}), (t) => ({...t, on_success: ['nope']}),
    ];
    for (let k = 0; k < 300; k++) {
      const i = rnd(ts.length);
      ts = ts.slice();
      if (rnd(20) === 0) ts.splice(i, 1);
      else ts[i] = edits[rnd(edits.length)](ts[i]);
      c = check(ts, c);
      expect(entries(c.problems), `after edit ${k}`).toEqual(entries(validate(ts)));
    }
  });
});

describe('tasks', () => {
  it('gives a new task a free name and drops empty fields', () => {
    const t = newTask('http', new Set(['http_1']));
    expect(t.name).toBe('http_2');
    expect(cleanTask({...t, url: 'http://x', headers: {}, retries: 0})).toEqual({name: 'http_2', type: 'http', method: 'GET', url: 'http://x'});
  });
});

describe('canonical', () => {
  it('is the same for a spec and its trip through the YAML view', async () => {
    const {toYAML} = await import('./yaml');
    const {parse} = await import('yaml');
    const s = {description: 'd', tasks: [{name: 'a', command: 'echo a', retries: 0, params: {}}, {name: 'b', type: 'http', url: 'http://x', depends_on: ['a'], method: 'GET'}]};
    const back = parse(toYAML({...s, tasks: s.tasks.map(cleanTask)}));
    expect(canonical(back)).toBe(canonical(s));
    // A real change is not.
    expect(canonical({...s, description: 'e'})).not.toBe(canonical(s));
    expect(canonical({...s, tasks: [s.tasks[0]]})).not.toBe(canonical(s));
  });
});

describe('workflow settings', () => {
  it('takes out the defaults the server spells in', () => {
    const stored = {name: 'w', failure_strategy: 'end', priority: 'medium', worker_group: 'default', timeout: '2h', timeout_strategy: 'warn',
      tasks: [{name: 'a', type: 'shell', priority: 'medium', command: 'x', timeout: '1m', timeout_strategy: 'fail'},
        {name: 'b', type: 'http', priority: 'high', url: 'http://x', timeout: '1m', timeout_strategy: 'warn'}]};
    expect(stripDefaults(stored)).toEqual({name: 'w', timeout: '2h',
      tasks: [{name: 'a', command: 'x', timeout: '1m'}, {name: 'b', type: 'http', priority: 'high', url: 'http://x', timeout: '1m', timeout_strategy: 'warn'}]});
    // What is not a default stays.
    const own = {failure_strategy: 'continue', priority: 'low', worker_group: 'etl', tasks: []};
    expect(stripDefaults(own)).toEqual(own);
  });

  it('names each bad setting', () => {
    const cases: [Record<string, unknown>, string, string][] = [
      [{timeout: '2 hours'}, 'timeout', 'not a duration'],
      [{max_active_runs: 0}, 'max_active_runs', '1 or more'],
      [{max_active_runs: 1.5}, 'max_active_runs', 'whole number'],
      [{alerts: {on: [], channels: ['ops']}}, 'alerts', 'tick at least one'],
      [{alerts: {on: ['failure'], channels: []}}, 'alerts', 'choose at least one channel'],
      [{params: {A: '1'}, secret_params: ['B']}, 'secret_params', 'B is not one of the params'],
      [{params: {'1X': '1'}}, 'params', '"1X"'],
    ];
    for (const [s, k, msg] of cases) expect(validateWorkflow({tasks: [], ...s})[k], k).toContain(msg);
    expect(validateWorkflow({tasks: [], timeout: '2h', max_active_runs: 2, alerts: {on: ['failure'], channels: ['ops']}, params: {A: ''}, secret_params: ['A']})).toEqual({});
  });

  it('drops the empty settings a form leaves', () => {
    expect(cleanWorkflow({description: '', params: {}, secret_params: [], alerts: {on: [], channels: []}, max_active_runs: undefined, tasks: [{name: 'a', command: 'x', retries: 0}]}))
      .toEqual({tasks: [{name: 'a', command: 'x'}]});
    expect(cleanWorkflow({params: {A: ''}, alerts: {on: ['failure'], channels: ['ops']}, tasks: []}))
      .toEqual({params: {A: ''}, alerts: {on: ['failure'], channels: ['ops']}, tasks: []});
  });

  it('finds comments', () => {
    const cases: [string, boolean][] = [
      ['# top\ntasks: []', true],
      ['tasks:\n  - name: a # the first', true],
      ['tasks:\n  - {name: a, command: "echo #1"}', false],
      ["description: it's plain # a comment", true],
      ['url: http://x/#frag', false],
    ];
    for (const [y, want] of cases) expect(hasComments(y), y).toBe(want);
  });
});

describe('task types from the registry', () => {
  it('gives every palette type its help and fields, and has a form only for registered types', () => {
    for (const ty of TASK_TYPES) {
      expect(TYPE_HELP[ty]).toBeTruthy();
      expect(Array.isArray(TYPE_FIELDS[ty])).toBe(true);
    }
    for (const ty of FORMS) expect(TASK_TYPES as readonly string[]).toContain(ty);
  });
});
