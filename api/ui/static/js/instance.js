// Instance: one run with its DAG, every task attempt, the operator actions,
// a task's log (followed while the task runs) and the run's history.

import {api, describe, get, readLog, user} from './api.js';
import {STOP_POLL, allow, badge, confirmDialog, duration, emptyRow, enc, flash, h, kv, link, paramsText, patch, replace, table,
  taskFinished, timeEl, workflowFinished, workflowHref, TASK_STATES} from './dom.js';
import {drawDag} from './dag.js';
import {trigger} from './instances.js';

const INSTANCE_ACTIONS = [
  ['stop', 'Stop', 'Kill the running tasks and start nothing new; the instance ends stopped.',
    ['running', 'submitted']],
  ['pause', 'Pause', 'Let the running tasks finish and start nothing new; the instance ends paused.',
    ['running', 'submitted']],
  ['resume', 'Resume', 'Continue the paused or stopped instance in place.', ['paused', 'stopped']],
  ['rerun', 'Rerun', 'Run the whole instance again in place: every task gets a new attempt.',
    ['succeeded', 'failed', 'stopped']],
  ['recover_failed', 'Recover failed', 'Rerun only the failed and killed tasks and the tasks downstream of them.',
    ['succeeded', 'failed', 'stopped', 'paused']],
];

const TASK_ACTIONS = [
  ['kill', 'Kill', (t) => ['submitted', 'dispatched', 'running', 'delayed'].includes(t.state),
    (t) => `Kill task ${t.name} (attempt ${t.attempt})? Its instance fails unless the task is retried.`],
  ['force_success', 'Force success', (t) => ['failed', 'killed'].includes(t.state),
    (t) => `Count task ${t.name} (attempt ${t.attempt}, ${t.state}) as forced_success, so the tasks after it may run?`],
  ['force_start', 'Force start', (t) => t.state === 'submitted' && t.task_group !== '',
    (t) => `Start task ${t.name} once without waiting for a slot in task group ${t.task_group}?`],
];

// Logs are read in pages; the viewer stops growing past MAX_LOG bytes.
const LOG_PAGE = 256 << 10;
const MAX_LOG = 4 << 20;
const LOG_POLL_MS = 1000;

// latestAttempts maps each task name to its newest attempt.
function latestAttempts(tasks) {
  const m = new Map();
  for (const t of tasks) {
    const cur = m.get(t.name);
    if (!cur || t.id > cur.id) m.set(t.name, t);
  }
  return m;
}

// inScope is the set of task names a run with start nodes covers (null: all).
function inScope(specTasks, startNodes, scope) {
  if (!startNodes || !startNodes.length) return null;
  const set = new Set(startNodes);
  const deps = new Map(specTasks.map((t) => [t.name, t.depends_on || []]));
  const next = new Map(specTasks.map((t) => [t.name, []]));
  for (const t of specTasks) for (const d of t.depends_on || []) next.get(d)?.push(t.name);
  const walk = scope === 'upstream' ? deps : scope === 'downstream' ? next : null;
  if (walk) {
    const stack = [...set];
    while (stack.length) {
      for (const n of walk.get(stack.pop()) || []) if (!set.has(n)) { set.add(n); stack.push(n); }
    }
  }
  return set;
}

function logViewer(page) {
  const title = h('h2', {}, 'Log');
  const status = h('span', {class: 'logstatus muted'});
  const pre = h('pre', {class: 'log', tabindex: 0});
  const box = h('section', {class: 'logpanel', hidden: true},
    h('div', {class: 'titlebar'}, title, status,
      h('button', {type: 'button', class: 'small', on: {click: () => close()}}, 'Close')),
    pre);
  let cur = null;

  function close() {
    if (cur) {
      clearTimeout(cur.timer);
      cur.ctrl.abort();
    }
    cur = null;
    box.hidden = true;
  }

  function open(task) {
    if (cur && cur.id === task.id) return;
    close();
    cur = {id: task.id, state: task.state, offset: 0, decoder: new TextDecoder('utf-8'), ctrl: new AbortController(), timer: 0};
    page.signal.addEventListener('abort', () => cur && cur.ctrl.abort());
    replace(title, 'Log of ', h('code', {}, task.name), ` attempt ${task.attempt} (task instance ${task.id})`);
    pre.textContent = '';
    status.textContent = 'loading…';
    status.className = 'logstatus muted';
    box.hidden = false;
    box.dataset.task = String(task.id);
    fetchMore(cur);
  }

  // update tells the viewer the task's latest state (from the instance poll).
  function update(tasks) {
    if (!cur) return;
    const t = tasks.find((x) => x.id === cur.id);
    if (t) cur.state = t.state;
  }

  async function fetchMore(c) {
    for (;;) {
      if (c !== cur || !page.alive) return;
      // Only a short read that began after the task finished is the end.
      const finishedBefore = taskFinished(c.state);
      let page_;
      try {
        page_ = await readLog(c.id, c.offset, LOG_PAGE, c.ctrl.signal);
      } catch (e) {
        if (c !== cur || e.name === 'AbortError') return;
        status.textContent = describe(e);
        status.className = 'logstatus err';
        if (e.status === 409 && finishedBefore) return; // never reached a worker: no log will come
        c.timer = setTimeout(() => fetchMore(c), 2000);
        return;
      }
      if (c !== cur) return;
      const atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
      const text = c.decoder.decode(page_.bytes, {stream: true});
      if (text) pre.append(text);
      c.offset = page_.next;
      if (atBottom) pre.scrollTop = pre.scrollHeight;
      if (c.offset >= MAX_LOG) {
        status.textContent = `showing the first ${c.offset} bytes; read the rest with: beluga task log ${c.id}`;
        status.className = 'logstatus muted';
        return;
      }
      if (page_.bytes.length === LOG_PAGE) continue;
      if (finishedBefore) {
        const rest = c.decoder.decode();
        if (rest) pre.append(rest);
        status.textContent = `${c.offset} bytes · end of log`;
        status.className = 'logstatus muted done';
        return;
      }
      status.textContent = `${c.offset} bytes · following (task ${c.state})…`;
      status.className = 'logstatus muted';
      c.timer = setTimeout(() => fetchMore(c), LOG_POLL_MS);
      return;
    }
  }

  return {el: box, open, update, get id() { return cur && cur.id; }};
}

// valuesList is a name/value list of one of a task attempt's maps.
function valuesList(cls, m) {
  const keys = Object.keys(m || {}).sort();
  if (!keys.length) return null;
  return h('dl', {class: ['values', cls]}, keys.map((k) => [h('dt', {}, k), h('dd', {}, m[k])]));
}

// taskValues shows what a task attempt ran with (its resolved params) and
// what it exported, folded: a run's tasks all carry the BELUGA_* params.
function taskValues(t) {
  const np = Object.keys(t.params || {}).length;
  const no = Object.keys(t.outputs || {}).length;
  if (!np && !no) return '';
  const plural = (n, w) => `${n} ${w}${n === 1 ? '' : 's'}`;
  return h('details', {class: 'values'},
    h('summary', {}, `${plural(np, 'param')} · ${plural(no, 'output')}`),
    np ? [h('h4', {}, 'Params'), valuesList('params-of', t.params)] : null,
    no ? [h('h4', {}, 'Outputs'), valuesList('outputs-of', t.outputs)] : null);
}

export function render(main, page, [idText]) {
  const id = Number(idText);
  let detail = null;
  let spec = null; // the workflow version's spec, or an Error
  let selected = '';
  let keepUntil = 0; // poll a finished instance until then (an action was just sent)

  const title = h('h1', {}, `Instance #${id}`);
  const head = h('div', {class: 'head'});
  const actions = h('div', {class: 'actions'});
  const dagNote = h('p', {class: 'muted'});
  const dagBox = h('div', {class: 'dagbox'});
  const tasksT = table(['ID', 'Task', 'Attempt', 'State', 'Host', 'PID', 'Exit', 'Started', 'Ended', 'Duration', 'Values', ''], 'tasks');
  const outputsT = table(['Output', 'Value', 'Task'], 'outputs');
  const histT = table(['At', 'Action', 'By', 'Task', 'Detail'], 'history');
  const log = logViewer(page);

  for (const [action, label, text, fits] of INSTANCE_ACTIONS) {
    actions.append(h('button', {type: 'button', disabled: true, title: 'loading the instance…', dataset: {action, fits: fits.join(' ')},
      on: {click: () => act(action, label, text)}}, label));
  }

  replace(main,
    h('div', {class: 'titlebar'}, title, actions),
    head,
    h('h2', {}, 'DAG'), dagNote, dagBox,
    h('p', {class: 'legend muted'}, ...TASK_STATES.map((st) => badge(st))),
    h('h2', {}, 'Tasks'), tasksT.table,
    log.el,
    h('h2', {}, 'Outputs'), outputsT.table,
    h('h2', {}, 'History'), histT.table);

  async function act(action, label, text) {
    if (!await confirmDialog(`${label} instance #${id}?`, text, label, action === 'stop')) return;
    try {
      const r = await api('POST', `/api/v1/instances/${id}/actions`, {json: {action, by: user()}});
      flash(`${action} requested (command ${r.command_id}); the instance is ${r.state}.`, 'ok');
      keepUntil = Date.now() + 60000;
      refresh();
    } catch (e) {
      flash(`${label} instance #${id}: ${describe(e)}`);
    }
  }

  async function taskAct(t, action, label, text) {
    if (!await confirmDialog(`${label} task ${t.name}?`, text, label, action === 'kill')) return;
    try {
      const r = await api('POST', `/api/v1/task-instances/${t.id}/actions`, {json: {action, by: user()}});
      flash(`${action} of task ${t.name} requested (command ${r.command_id}).`, 'ok');
      keepUntil = Date.now() + 60000;
      refresh();
    } catch (e) {
      flash(`${label} task ${t.name}: ${describe(e)}`);
    }
  }

  function select(name) {
    selected = name;
    const t = detail && latestAttempts(detail.tasks).get(name);
    if (t) log.open(t);
    else flash(`Task ${name} has not started in this run, so it has no log.`, 'info');
    if (detail) drawDagNow();
  }

  function drawDagNow() {
    const latest = latestAttempts(detail.tasks);
    let tasks;
    if (spec && !(spec instanceof Error)) {
      tasks = spec.tasks || [];
      dagNote.textContent = '';
    } else {
      tasks = [...latest.keys()].map((name) => ({name}));
      dagNote.textContent = spec instanceof Error
        ? `The definition of ${detail.workflow} version ${detail.version} is not available (${describe(spec)}); the tasks are shown without their dependencies.`
        : '';
    }
    const scope = spec && !(spec instanceof Error) ? inScope(tasks, detail.start_nodes, detail.scope) : null;
    const info = (name) => {
      const t = latest.get(name);
      if (!t) {
        const out = scope && !scope.has(name);
        return {state: out ? 'skipped' : '', label: out ? 'not in this run' : 'not started',
          title: `${name}: ${out ? 'not in this run (start nodes)' : 'not started yet'}`};
      }
      const d = t.start_time ? ' · ' + duration(t.start_time, t.end_time) : '';
      return {state: t.state, label: `${t.state}${t.attempt > 1 ? ' · #' + t.attempt : ''}${d}`,
        title: `${name}: ${t.state}, attempt ${t.attempt}, task instance ${t.id}${t.host ? ' on ' + t.host : ''}`};
    };
    patch(dagBox, tasks.length ? drawDag(tasks, info, select, selected) : h('p', {class: 'muted'}, 'No tasks.'));
  }

  function renderAll(d) {
    patch(title, `Instance #${d.id} `, badge(d.state));
    const scope = d.start_nodes && d.start_nodes.length
      ? [d.start_nodes.join(', '), h('span', {class: 'muted'}, ` (scope ${d.scope || 'only'})`)] : null;
    patch(head, kv([
      ['Workflow', [link(workflowHref(d.project, d.workflow), `${d.project}/${d.workflow}`), ` version ${d.version}`]],
      ['State', [badge(d.state), d.reason ? h('span', {class: 'reason'}, ' ' + d.reason) : null]],
      ['Trigger', trigger(d)],
      ['Parent', d.parent ? [link(`#/instances/${d.parent.instance_id}`, `#${d.parent.instance_id}`),
        h('span', {class: 'muted'}, ` (sub_workflow task instance ${d.parent.task_instance_id})`)] : null],
      ['Priority', d.priority],
      ['Worker group', d.worker_group],
      ['Params', paramsText(d.params)],
      ['Start nodes', scope],
      ['Dry run', d.dry_run ? 'yes: tasks are recorded as succeeded without running' : 'no'],
      ['Run times', String(d.run_times)],
      ['Master', d.host],
      ['Created', timeEl(d.created_at)],
      ['Started', timeEl(d.start_time)],
      ['Ended', timeEl(d.end_time)],
      ['Duration', duration(d.start_time, d.end_time)],
    ]));
    for (const b of actions.querySelectorAll('button[data-action]')) {
      const fits = b.dataset.fits.split(' ');
      allow(b, fits.includes(d.state) ? '' : `${b.textContent} is not possible while the instance is ${d.state}; it needs ${fits.join(' or ')}.`);
    }

    const byId = new Map(d.tasks.map((t) => [t.id, t]));
    const tasks = [...d.tasks].sort((a, b) => a.id - b.id);
    patch(tasksT.tbody, tasks.length ? tasks.map((t) => h('tr', {key: t.id, class: [t.superseded && 'superseded', log.id === t.id && 'current'],
      dataset: {id: t.id, task: t.name, state: t.state}},
    h('td', {class: 'num'}, String(t.id)),
    h('td', {}, t.name, t.task_group ? h('span', {class: 'tag', title: 'task group'}, t.task_group) : null),
    h('td', {class: 'num'}, String(t.attempt), t.superseded ? h('span', {class: 'tag', title: 'an earlier attempt, replaced by a rerun or retry'}, 'superseded') : null),
    h('td', {}, badge(t.state), t.dry_run ? h('span', {class: 'tag'}, 'dry run') : null,
      t.child_instance_id ? h('span', {class: 'tag', title: 'child run'}, link(`#/instances/${t.child_instance_id}`, `child #${t.child_instance_id}`)) : null,
      t.message ? h('div', {class: 'reason muted', title: t.message}, t.message) : null),
    h('td', {}, t.host),
    h('td', {class: 'num'}, t.pid ? String(t.pid) : ''),
    h('td', {class: 'num'}, t.exit_code === null || t.exit_code === undefined ? '' : String(t.exit_code)),
    h('td', {}, timeEl(t.start_time)),
    h('td', {}, timeEl(t.end_time)),
    h('td', {class: 'num'}, duration(t.start_time, t.end_time)),
    h('td', {}, taskValues(t)),
    h('td', {class: 'rowactions'},
      h('button', {type: 'button', class: 'small', dataset: {log: t.id}, on: {click: () => { selected = t.name; log.open(t); drawDagNow(); }}}, 'Log'),
      t.superseded ? null : TASK_ACTIONS.filter(([, , fits]) => fits(t)).map(([action, label, , text]) =>
        h('button', {type: 'button', class: 'small', dataset: {action},
          on: {click: () => taskAct(t, action, label, text(t))}}, label))))) : emptyRow(12, 'No task has been submitted yet.'));

    // Each output with the attempt that exported it (the API's order).
    patch(outputsT.tbody, d.outputs && d.outputs.length ? d.outputs.map((o) => {
      const t = byId.get(o.task_instance_id);
      return h('tr', {key: `${o.task_instance_id}/${o.name}`, dataset: {output: o.name, taskInstance: o.task_instance_id}},
        h('td', {}, h('code', {}, o.name)),
        h('td', {class: 'value'}, o.value),
        h('td', {}, t ? `${t.name} #${t.attempt} (${t.id})` : `${o.task} (${o.task_instance_id})`));
    }) : emptyRow(3, 'No task has exported a value.'));

    // History only grows: an entry's place from the oldest is its key.
    patch(histT.tbody, d.history.length ? d.history.map((e, i) => [e, i]).reverse().map(([e, i]) => {
      const t = e.task_instance_id ? byId.get(e.task_instance_id) : null;
      return h('tr', {key: i},
        h('td', {}, timeEl(e.at)),
        h('td', {}, e.action),
        h('td', {}, e.by),
        h('td', {}, e.task_instance_id ? (t ? `${t.name} #${t.attempt} (${t.id})` : String(e.task_instance_id)) : h('span', {class: 'muted'}, 'instance')),
        h('td', {class: 'detail'}, e.detail));
    }) : emptyRow(5, 'No operator actions.'));
    log.update(d.tasks);
    drawDagNow();
  }

  const refresh = page.poll(async () => {
    if (detail && workflowFinished(detail.state) && Date.now() > keepUntil) return;
    let d;
    try {
      d = await get(`/api/v1/instances/${id}`, {signal: page.signal});
    } catch (e) {
      if (e.status !== 404 || !page.alive) throw e;
      // Gone, or never was: say so once, and stop asking.
      replace(main, h('h1', {}, `Instance #${id} not found`), h('p', {class: 'muted'}, describe(e)),
        h('p', {}, link('#/instances', 'Go to instances'), '.'));
      return STOP_POLL;
    }
    if (!page.alive) return;
    if (!spec || (spec instanceof Error && spec.status !== 404)) {
      try {
        spec = (await get(`/api/v1/projects/${enc(d.project)}/workflows/${enc(d.workflow)}?version=${d.version}`,
          {signal: page.signal})).spec;
      } catch (e) {
        if (e.name === 'AbortError') throw e;
        spec = e;
      }
    }
    detail = d;
    renderAll(d);
  });
}
