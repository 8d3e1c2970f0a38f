// Backfills: every backfill with its progress; one backfill with each of
// its schedule times and the run for it; and the backfill form of a
// workflow page.

import {api, describe, get, user} from './api.js';
import {fillPickers} from './instances.js';
import {PRIORITIES, allow, badge, confirmDialog, duration, emptyRow, enc, flash, go, h, kv, kvEditor, link, paramsText,
  patch, replace, rfc3339Local, s, select, table, timeEl, workflowHref} from './dom.js';

const STATES = ['running', 'done', 'failed', 'stopped'];

// live says whether a backfill may still change: it submits more times,
// or runs it submitted have not finished (a stopped backfill's runs go on).
function live(b) {
  return b.state === 'running' || b.progress.unfinished > 0;
}

function backfillHref(id) {
  return `#/backfills/${id}`;
}

// bar is a stacked bar of the runs that succeeded, failed and are
// unfinished; the rest of its width is the times not submitted yet.
function bar(b) {
  const W = 120, H = 10;
  const total = Math.max(b.total, 1);
  const p = b.progress;
  const svg = s('svg', {class: 'bfbar', width: W, height: H, viewBox: `0 0 ${W} ${H}`, 'aria-hidden': 'true'},
    s('rect', {class: 'rest', x: 0, y: 0, width: W, height: H}));
  let x = 0;
  for (const [cls, n] of [['succeeded', p.succeeded], ['failed', p.failed], ['unfinished', p.unfinished]]) {
    if (!n) continue;
    const w = W * n / total;
    svg.append(s('rect', {class: cls, x, y: 0, width: w, height: H}));
    x += w;
  }
  return svg;
}

function progress(b) {
  const p = b.progress;
  return h('span', {class: 'bfprogress'}, bar(b),
    h('span', {class: 'submitted', title: 'times submitted / schedule times'}, `${b.submitted}/${b.total}`),
    ' · ', h('span', {class: 'n-succeeded'}, `${p.succeeded} succeeded`),
    ' · ', h('span', {class: ['n-failed', p.failed && 'bad']}, `${p.failed} failed`),
    ' · ', h('span', {class: 'n-unfinished'}, `${p.unfinished} unfinished`));
}

export function render(main, page, _args, query) {
  const f = {project: query.get('project') || '', workflow: query.get('workflow') || '', state: query.get('state') || ''};
  const hrefWith = (changes) => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries({...f, ...changes})) if (v) q.set(k, v);
    const qs = q.toString();
    return '#/backfills' + (qs ? '?' + qs : '');
  };

  const projectSel = select('project', [['', 'all projects']], f.project);
  const workflowSel = select('workflow', [['', 'all workflows']], f.workflow, {disabled: !f.project});
  const stateSel = select('state', [['', 'any state'], ...STATES], f.state);
  if (f.project) projectSel.append(h('option', {value: f.project, selected: true}, f.project));
  if (f.workflow) workflowSel.append(h('option', {value: f.workflow, selected: true}, f.workflow));
  projectSel.addEventListener('change', () => go(hrefWith({project: projectSel.value, workflow: ''})));
  workflowSel.addEventListener('change', () => go(hrefWith({workflow: workflowSel.value})));
  stateSel.addEventListener('change', () => go(hrefWith({state: stateSel.value})));

  const {table: t, tbody} = table(['ID', 'Workflow', 'State', 'Progress', 'Parallelism', 'Requested by', 'Created'], 'backfills');
  replace(main,
    h('div', {class: 'titlebar'}, h('h1', {}, 'Backfills'),
      h('form', {class: 'filters', on: {submit: (e) => e.preventDefault()}},
        projectSel, workflowSel, stateSel,
        (f.project || f.workflow || f.state) ? link('#/backfills', 'clear filters') : null)),
    h('p', {class: 'hint'}, 'Start a backfill from a workflow page: it runs the workflow once per schedule time of a past range.'),
    t);

  fillPickers(page, f, projectSel, workflowSel);

  page.poll(async () => {
    const q = new URLSearchParams();
    for (const k of ['project', 'workflow', 'state']) if (f[k]) q.set(k, f[k]);
    const list = await get('/api/v1/backfills' + (q.toString() ? '?' + q : ''), {signal: page.signal});
    if (!page.alive) return;
    patch(tbody, list.items.length ? list.items.map((b) => h('tr', {key: b.id, dataset: {id: b.id, state: b.state}},
      h('td', {}, link(backfillHref(b.id), `#${b.id}`)),
      h('td', {}, link(workflowHref(b.project, b.workflow), `${b.project}/${b.workflow}`)),
      h('td', {}, badge(b.state), b.dry_run ? h('span', {class: 'tag'}, 'dry run') : null),
      h('td', {}, progress(b)),
      h('td', {class: 'num'}, String(b.parallelism)),
      h('td', {}, b.requested_by),
      h('td', {}, timeEl(b.created_at))))
      : emptyRow(7, 'No backfills match. Start one from a workflow page.'));
  });
}

// renderOne is the page of one backfill.
export function renderOne(main, page, [idText]) {
  const id = Number(idText);
  let cur = null;
  let keepUntil = 0; // poll a finished backfill until then (a stop was just sent)

  const title = h('h1', {}, `Backfill #${id}`);
  const stop = h('button', {type: 'button', class: 'danger', id: 'backfill-stop', disabled: true, title: 'loading the backfill…', on: {click: () => stopIt()}}, 'Stop');
  const head = h('div', {class: 'head'});
  const tt = table(['#', 'Schedule time', 'Run', 'State', 'Started', 'Duration'], 'times');
  replace(main,
    h('div', {class: 'titlebar'}, title, h('div', {class: 'actions'}, stop)),
    head,
    h('h2', {}, 'Schedule times'),
    h('p', {class: 'hint'}, 'In the order they are submitted, each with its run.'),
    tt.table);

  async function stopIt() {
    if (!await confirmDialog(`Stop backfill #${id}?`,
      'No more of its schedule times are submitted; the runs already submitted go on.', 'Stop')) return;
    try {
      const b = await api('POST', `/api/v1/backfills/${id}/actions`, {json: {action: 'stop', by: user()}});
      flash(`Backfill #${id} stopped: ${b.submitted} of ${b.total} times submitted.`, 'ok');
      keepUntil = Date.now() + 10000;
      refresh();
    } catch (e) {
      flash(`Stop backfill #${id}: ${describe(e)}`);
    }
  }

  function show(b, runs) {
    patch(title, `Backfill #${b.id} `, badge(b.state));
    allow(stop, b.state === 'running' ? '' : `Stop is not possible while the backfill is ${b.state}; only a running backfill can be stopped.`);
    const many = b.times.length > 1;
    const desc = many && new Date(b.times[0]) > new Date(b.times[b.times.length - 1]);
    patch(head, kv([
      ['Workflow', link(workflowHref(b.project, b.workflow), `${b.project}/${b.workflow}`)],
      ['State', badge(b.state)],
      ['Progress', progress(b)],
      ['Reason', b.reason || null],
      ['Cron', [h('code', {class: 'cron'}, b.cron), ` (${b.timezone || 'UTC'})`]],
      ['Range', [timeEl(b.start, b.timezone), ' → ', timeEl(b.end, b.timezone), h('span', {class: 'muted'}, ' both included')]],
      ['Order', many ? (desc ? 'newest first' : 'oldest first') : null],
      ['Parallelism', `${b.parallelism} unfinished at a time`],
      ['On failure', b.on_failure === 'stop' ? 'stop: submit no more once a run failed' : 'continue past failed runs'],
      ['Priority', b.priority || h('span', {class: 'muted'}, "workflow's")],
      ['Worker group', b.worker_group || h('span', {class: 'muted'}, "workflow's")],
      ['Params', paramsText(b.params)],
      ['Dry run', b.dry_run ? 'yes: tasks are recorded as succeeded without running' : 'no'],
      ['Requested by', b.requested_by],
      ['Created', timeEl(b.created_at)],
      ['Ended', timeEl(b.end_at)],
    ]));

    // A time's run is the one with its schedule time (each time runs once).
    const byTime = new Map();
    for (const r of runs) {
      if (!r.schedule_time) continue;
      const k = new Date(r.schedule_time).getTime();
      if (!byTime.has(k) || r.id < byTime.get(k).id) byTime.set(k, r);
    }
    patch(tt.tbody, b.times.length ? b.times.map((t, i) => {
      const r = byTime.get(new Date(t).getTime());
      const none = i < b.submitted ? 'submitted; its run is not found' : 'not submitted';
      return h('tr', {key: t, class: !r && 'pending', dataset: {time: t, instance: r ? r.id : '', state: r ? r.state : ''}},
        h('td', {class: 'num'}, String(i + 1)),
        h('td', {}, timeEl(t, b.timezone)),
        h('td', {}, r ? link(`#/instances/${r.id}`, `#${r.id}`) : h('span', {class: 'muted'}, none)),
        h('td', {}, r ? badge(r.state) : null),
        h('td', {}, r ? timeEl(r.start_time) : null),
        h('td', {class: 'num'}, r ? duration(r.start_time, r.end_time) : null));
    }) : emptyRow(6, 'No schedule times.'));
  }

  const refresh = page.poll(async () => {
    if (cur && !live(cur) && Date.now() > keepUntil) return;
    // The runs are read after the backfill, so they are at least as new
    // as its progress: the last read of a finished backfill shows them done.
    const b = await get(`/api/v1/backfills/${id}`, {signal: page.signal});
    const runs = await get(`/api/v1/instances?backfill=${id}&limit=1000`, {signal: page.signal});
    if (!page.alive) return;
    cur = b;
    show(b, runs.items);
  });
}

// backfillPanel is the form on a workflow page that starts a backfill. Its
// setSchedule is told the workflow's schedule (null: none), whose cron and
// zone a backfill without a cron takes.
export function backfillPanel(project, name, spec) {
  const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || 'local time';
  const from = h('input', {type: 'datetime-local', step: 1, name: 'start', id: 'backfill-from', required: true});
  const to = h('input', {type: 'datetime-local', step: 1, name: 'end', id: 'backfill-to', required: true});
  const sent = h('p', {class: 'hint', id: 'backfill-sent'});
  // The placeholders say whether the schedule's cron applies once it is known.
  const cron = h('input', {name: 'cron', id: 'backfill-cron', spellcheck: 'false', placeholder: 'e.g. 0 2 * * *'});
  const tz = h('input', {name: 'timezone', id: 'backfill-tz', spellcheck: 'false', placeholder: 'UTC'});
  const par = h('input', {type: 'number', name: 'parallelism', id: 'backfill-parallelism', min: 1, max: 100, value: 1,
    title: 'how many of its runs may be unfinished at a time, 1 to 100'});
  const order = select('order', [['asc', 'oldest first'], ['desc', 'newest first']], 'asc', {id: 'backfill-order'});
  const onFailure = select('on_failure', [['continue', 'continue past failed runs'], ['stop', 'stop: submit no more once a run failed']],
    'continue', {id: 'backfill-on-failure'});
  const prio = select('priority', [['', `workflow's (${spec.priority || 'medium'})`], ...PRIORITIES], '');
  const group = h('input', {name: 'worker_group', placeholder: spec.worker_group || 'default', spellcheck: 'false'});
  const params = kvEditor({}, spec.params || {});
  const dry = h('input', {type: 'checkbox', name: 'dry_run'});
  const err = h('pre', {class: 'apierror', role: 'alert', hidden: true, id: 'backfill-error'});
  const btn = h('button', {type: 'submit', class: 'primary', id: 'backfill-submit'}, 'Start backfill');

  function setSchedule(sc) {
    cron.placeholder = sc ? `the schedule's: ${sc.cron}` : 'required (no schedule), e.g. 0 2 * * *';
    tz.placeholder = sc ? `the schedule's: ${sc.timezone || 'UTC'}` : 'UTC';
  }

  // Show what the range is sent as, so the zone it is read in is plain.
  function showSent() {
    const a = rfc3339Local(from.value), b = rfc3339Local(to.value);
    sent.textContent = a || b ? `Sent as ${a || '(not set)'} to ${b || '(not set)'}` : '';
  }
  from.addEventListener('input', showSent);
  to.addEventListener('input', showSent);

  async function submit(e) {
    e.preventDefault();
    err.hidden = true;
    const start = rfc3339Local(from.value), end = rfc3339Local(to.value);
    if (start === null || end === null) {
      err.textContent = 'From or To is not a valid date and time.';
      err.hidden = false;
      return;
    }
    const body = {start, end, order: order.value, on_failure: onFailure.value, by: user()};
    if (cron.value.trim()) body.cron = cron.value.trim();
    if (tz.value.trim()) body.timezone = tz.value.trim();
    if (par.value !== '') body.parallelism = Number(par.value);
    if (prio.value) body.priority = prio.value;
    if (group.value.trim()) body.worker_group = group.value.trim();
    const p = params.get();
    if (Object.keys(p).length) body.params = p;
    if (dry.checked) body.dry_run = true;
    btn.disabled = true;
    try {
      const b = await api('POST', `/api/v1/projects/${enc(project)}/workflows/${enc(name)}/backfill`, {json: body});
      go(backfillHref(b.id), `Backfill #${b.id} started: ${b.total} schedule time${b.total === 1 ? '' : 's'} of ${b.cron} (${b.timezone || 'UTC'}).`);
    } catch (ex) {
      err.textContent = describe(ex);
      err.hidden = false;
    } finally {
      btn.disabled = false;
    }
  }

  const el = h('form', {class: 'panel form', id: 'backfill-form', on: {submit}},
    h('div', {class: 'titlebar'}, h('h2', {}, 'Backfill'),
      h('span', {class: 'actions'}, link(`#/backfills?project=${enc(project)}&workflow=${enc(name)}`, 'its backfills'))),
    h('p', {class: 'hint'}, 'Runs the workflow once per schedule time of a past range, both ends included; times after now are left to the schedule.'),
    h('label', {class: 'field'}, h('span', {}, 'From'), from),
    h('label', {class: 'field'}, h('span', {}, 'To'), to),
    h('p', {class: 'hint'}, `From and To are in your browser's zone (${zone}) and are sent as RFC 3339 times; the cron's timezone says which times fire.`),
    sent,
    h('label', {class: 'field'}, h('span', {}, 'Cron'), cron),
    h('label', {class: 'field'}, h('span', {}, 'Timezone'), tz),
    h('p', {class: 'hint'}, "With no cron the schedule's cron and timezone are used; a cron given without a timezone is UTC."),
    h('label', {class: 'field'}, h('span', {}, 'Parallelism'), par),
    h('label', {class: 'field'}, h('span', {}, 'Order'), order),
    h('label', {class: 'field'}, h('span', {}, 'On failure'), onFailure),
    h('label', {class: 'field'}, h('span', {}, 'Priority'), prio),
    h('label', {class: 'field'}, h('span', {}, 'Worker group'), group),
    h('div', {class: 'field'}, h('span', {}, 'Params'), params.el),
    h('label', {class: 'field'}, h('span', {}, 'Dry run'), h('span', {}, dry, ' record every task as succeeded without running it')),
    err,
    h('div', {class: 'buttons'}, btn));
  return {el, setSchedule};
}
