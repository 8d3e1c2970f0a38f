// Schedules: every cron schedule, and the schedule panel of a workflow page
// (show, set, enable/disable, delete).

import {api, describe, get, user} from './api.js';
import {PRIORITIES, STOP_POLL, confirmDialog, emptyRow, enc, flash, go, h, kv, kvEditor, link, localInput, paramsText, patch, replace,
  select, table, timeEl, workflowHref} from './dom.js';

const CRON_HELP = '5 fields (minute hour day-of-month month day-of-week), 6 with leading seconds, ' +
  'or @daily, @hourly, @every 1h';

// previewAs shows in el the next fire times of the cron and zone typed, as
// the API computes them (POST /api/v1/schedule-preview), on the schedule's
// clock (the browser's local time on hover); asked 300 ms after typing
// stops, an older answer never overwriting a newer one.
function previewAs(el, cron, tz) {
  let timer = 0, ctrl = null;
  function show() {
    clearTimeout(timer);
    timer = setTimeout(ask, 300);
  }
  async function ask() {
    if (ctrl) ctrl.abort();
    if (!el.isConnected && ctrl) return;
    const expr = cron.value.trim(), zone = tz.value.trim();
    if (!expr) {
      replace(el, h('span', {class: 'muted'}, 'Type a cron to see when it fires.'));
      return;
    }
    const my = ctrl = new AbortController();
    try {
      const r = await api('POST', '/api/v1/schedule-preview', {json: {cron: expr, timezone: zone, count: 5}, signal: my.signal});
      if (my !== ctrl) return;
      const name = zone || 'UTC';
      replace(el, h('ol', {class: 'fires preview', dataset: {cron: expr, zone: name}}, r.times.map((t) => {
        let wall;
        try {
          wall = new Date(t).toLocaleString('sv-SE', {timeZone: name});
        } catch {
          wall = t;
        }
        return h('li', {title: 'your time ' + new Date(t).toLocaleString('sv-SE') + '\nUTC ' + t}, h('time', {datetime: t}, wall), ' ', h('span', {class: 'muted'}, name));
      })));
    } catch (e) {
      if (my !== ctrl || (e && e.name === 'AbortError')) return;
      replace(el, h('span', {class: 'apierror preview-error', role: 'status'}, describe(e)));
    }
  }
  cron.addEventListener('input', show);
  tz.addEventListener('input', show);
  ask();
}

function schedulePath(project, workflow) {
  return `/api/v1/projects/${enc(project)}/workflows/${enc(workflow)}/schedule`;
}

// requestOf is the body that PUTs sc back as it is (for enable/disable).
function requestOf(sc) {
  const r = {cron: sc.cron, timezone: sc.timezone, catchup: sc.catchup, overlap: sc.overlap, worker_group: sc.worker_group,
    params: sc.params, enabled: sc.enabled, by: user(), version: sc.version};
  if (sc.priority) r.priority = sc.priority;
  if (sc.start_time) r.start_time = sc.start_time;
  if (sc.end_time) r.end_time = sc.end_time;
  return r;
}

async function setEnabled(sc, enabled) {
  return api('PUT', schedulePath(sc.project, sc.workflow), {json: {...requestOf(sc), enabled}});
}

function enabledBadge(sc) {
  return h('span', {class: ['badge', sc.enabled ? 'st-enabled' : 'st-disabled']}, sc.enabled ? 'enabled' : 'disabled');
}

// localInput turns an RFC 3339 time into a datetime-local value, and back.
function toLocalInput(iso) {
  return iso ? localInput(new Date(iso)) : '';
}

function fromLocalInput(v) {
  return v ? new Date(v).toISOString() : '';
}

// schedulePanel shows and edits a workflow's schedule; onChange (optional)
// is told each schedule shown (null: none), for the panels that default to it.
export function schedulePanel(page, project, workflow, spec, onChange) {
  const body = h('div');
  const box = h('section', {class: 'panel', id: 'schedule-panel'}, h('h2', {}, 'Schedule'), body);
  let editing = false;
  let current = null; // the schedule shown, or null for none

  let follow = () => {}; // set below: restarts the poll once a schedule is shown
  function view(sc) {
    current = sc;
    editing = false;
    if (onChange) onChange(sc);
    if (sc) follow();
    if (!sc) {
      patch(body, h('p', {class: 'muted'}, 'Not scheduled: it runs only when started by hand.'),
        h('button', {type: 'button', id: 'schedule-set', on: {click: () => edit(null)}}, 'Set schedule'));
      return;
    }
    patch(body, kv([
      ['Cron', h('code', {class: 'cron'}, sc.cron)],
      ['Timezone', sc.timezone || 'UTC'],
      ['Status', enabledBadge(sc)],
      ['Next fire', h('span', {class: 'next-fire'}, sc.next_fire_time ? timeEl(sc.next_fire_time, sc.timezone) : 'none')],
      ['Upcoming', sc.upcoming.length ? h('ol', {class: 'upcoming'}, sc.upcoming.map((t) => h('li', {}, timeEl(t, sc.timezone))))
        : h('span', {class: 'muted'}, sc.enabled ? 'none left in the window' : 'none while disabled')],
      ['Last fire', timeEl(sc.last_fire_time, sc.timezone)],
      ['Catch-up', sc.catchup],
      ['Overlap', sc.skipped_fires ? [sc.overlap, ` (${sc.skipped_fires} fire(s) skipped, the last for `, timeEl(sc.last_skipped_time, sc.timezone), ')']
        : sc.overlap],
      ['Priority', sc.priority || `workflow's (${spec.priority || 'medium'})`],
      ['Worker group', sc.worker_group || h('span', {class: 'muted'}, "workflow's")],
      ['Params', paramsText(sc.params)],
      ['Window', sc.start_time || sc.end_time ? [timeEl(sc.start_time), ' → ', timeEl(sc.end_time)] : null],
      ['Note', sc.note || null],
      ['Updated', [timeEl(sc.updated_at), ` by ${sc.updated_by} (revision ${sc.revision})`]],
    ]), h('div', {class: 'buttons'},
      h('button', {type: 'button', id: 'schedule-edit', on: {click: () => edit(sc)}}, 'Edit'),
      h('button', {type: 'button', id: 'schedule-toggle', on: {click: () => toggle(sc)}}, sc.enabled ? 'Disable' : 'Enable'),
      h('button', {type: 'button', class: 'danger', id: 'schedule-delete', on: {click: () => del()}}, 'Delete')));
  }

  async function toggle(sc) {
    try {
      view(await setEnabled(sc, !sc.enabled));
      flash(`Schedule ${sc.enabled ? 'disabled' : 'enabled'}.`, 'ok');
    } catch (e) {
      flash(`Schedule of ${workflow}: ${describe(e)}`);
    }
  }

  async function del() {
    if (!await confirmDialog(`Delete the schedule of ${workflow}?`, 'No more runs are fired by it; past runs stay.', 'Delete')) return;
    try {
      await api('DELETE', schedulePath(project, workflow));
      flash('Schedule deleted.', 'ok');
      view(null);
    } catch (e) {
      flash(`Delete schedule of ${workflow}: ${describe(e)}`);
    }
  }

  function edit(sc) {
    editing = true;
    const zone = Intl.DateTimeFormat().resolvedOptions().timeZone || '';
    const cron = h('input', {name: 'cron', id: 'schedule-cron', value: sc ? sc.cron : '', placeholder: '0 2 * * *', required: true,
      spellcheck: 'false', title: CRON_HELP});
    const tz = h('input', {name: 'timezone', id: 'schedule-tz', value: sc ? sc.timezone : '', spellcheck: 'false',
      placeholder: `UTC (yours: ${zone})`});
    const start = h('input', {type: 'datetime-local', step: 1, name: 'start_time', id: 'schedule-start',
      value: toLocalInput(sc && sc.start_time)});
    const end = h('input', {type: 'datetime-local', step: 1, name: 'end_time', id: 'schedule-end',
      value: toLocalInput(sc && sc.end_time)});
    const catchup = select('catchup', [['latest', 'latest: one run for the newest missed time'], ['all', 'all missed times'], ['none', 'none: skip missed times']],
      sc ? sc.catchup : 'latest');
    const overlap = select('overlap', [['allow', 'allow: runs may overlap'], ['skip', 'skip: no fire while a run is unfinished'],
      ['wait', 'wait: queue the fire until the previous run ends'], ['replace', 'replace: stop the unfinished run, then run']],
      sc ? sc.overlap || 'allow' : 'allow', {id: 'schedule-overlap'});
    const prio = select('priority', [['', `workflow's (${spec.priority || 'medium'})`], ...PRIORITIES], sc ? sc.priority || '' : '');
    const group = h('input', {name: 'worker_group', value: sc ? sc.worker_group : '', placeholder: spec.worker_group || 'default', spellcheck: 'false'});
    const params = kvEditor(sc ? sc.params : {});
    const enabled = h('input', {type: 'checkbox', name: 'enabled', checked: sc ? sc.enabled : true});
    const err = h('pre', {class: 'apierror', role: 'alert', hidden: true, id: 'schedule-error'});
    const save = h('button', {type: 'submit', class: 'primary', id: 'schedule-save'}, 'Save schedule');
    const preview = h('div', {class: 'schedule-preview', id: 'schedule-preview', 'aria-live': 'polite'});
    previewAs(preview, cron, tz);

    async function submit(e) {
      e.preventDefault();
      err.hidden = true;
      const req = {cron: cron.value.trim(), timezone: tz.value.trim(), catchup: catchup.value, overlap: overlap.value,
        worker_group: group.value.trim(), params: params.get(), enabled: enabled.checked, by: user(), version: sc ? sc.version : 0};
      if (prio.value) req.priority = prio.value;
      try {
        if (start.value) req.start_time = fromLocalInput(start.value);
        if (end.value) req.end_time = fromLocalInput(end.value);
      } catch {
        err.textContent = 'The window start or end is not a valid date and time.';
        err.hidden = false;
        return;
      }
      save.disabled = true;
      try {
        const out = await api('PUT', schedulePath(project, workflow), {json: req});
        flash('Schedule saved.', 'ok');
        view(out);
      } catch (ex) {
        err.textContent = describe(ex);
        err.hidden = false;
      } finally {
        save.disabled = false;
      }
    }

    replace(body, h('form', {class: 'form', id: 'schedule-form', on: {submit}},
      h('label', {class: 'field'}, h('span', {}, 'Cron'), cron),
      h('p', {class: 'hint'}, CRON_HELP),
      h('label', {class: 'field'}, h('span', {}, 'Timezone'), tz),
      h('div', {class: 'field'}, h('span', {}, 'Next fires'), preview),
      h('label', {class: 'field'}, h('span', {}, 'Catch-up'), catchup),
      h('label', {class: 'field'}, h('span', {}, 'Overlap'), overlap),
      h('label', {class: 'field'}, h('span', {}, 'Priority'), prio),
      h('label', {class: 'field'}, h('span', {}, 'Worker group'), group),
      h('div', {class: 'field'}, h('span', {}, 'Params'), params.el),
      h('label', {class: 'field'}, h('span', {}, 'From'), start),
      h('label', {class: 'field'}, h('span', {}, 'Until'), end),
      h('label', {class: 'field'}, h('span', {}, 'Enabled'), h('span', {}, enabled)),
      err,
      h('div', {class: 'buttons'}, save,
        h('button', {type: 'button', on: {click: () => view(current)}}, 'Cancel'))));
    cron.focus();
  }

  // Next fire and upcoming move with time: refresh while only shown. No
  // schedule (a 404) is an answer, not an error, and nothing moves then:
  // the poll stops until this panel shows a schedule again.
  let loaded = false;
  let following = true;
  const refresh = page.poll(async () => {
    if (editing) return;
    let sc = null;
    try {
      sc = await get(schedulePath(project, workflow), {signal: page.signal});
    } catch (e) {
      if (e.status !== 404) throw e;
    }
    if (!page.alive || editing) return;
    if (!loaded || JSON.stringify(sc) !== JSON.stringify(current)) view(sc);
    loaded = true;
    following = sc !== null;
    return following ? undefined : STOP_POLL;
  }, 10000);
  follow = () => {
    if (!following) {
      following = true;
      refresh();
    }
  };
  return box;
}

export function render(main, page, _args, query) {
  const project = query.get('project') || '';
  const {table: t, tbody} = table(['Workflow', 'Cron', 'Timezone', 'Status', 'Catch-up', 'Next fire', 'Last fire', 'Updated', '']);
  const picker = select('project', [['', 'all projects']], project);
  if (project) picker.append(h('option', {value: project, selected: true}, project));
  picker.addEventListener('change', () => go('#/schedules' + (picker.value ? `?project=${enc(picker.value)}` : '')));
  get('/api/v1/projects', {signal: page.signal}).then((r) => {
    for (const p of r.items) if (p.name !== project) picker.append(h('option', {value: p.name}, p.name));
  }).catch((e) => page.alive && flash('projects: ' + describe(e)));
  replace(main, h('div', {class: 'titlebar'}, h('h1', {}, 'Schedules'),
    h('form', {class: 'filters', on: {submit: (e) => e.preventDefault()}}, picker)), t);

  const refresh = page.poll(async () => {
    const list = await get('/api/v1/schedules' + (project ? `?project=${enc(project)}` : ''), {signal: page.signal});
    if (!page.alive) return;
    patch(tbody, list.items.length ? list.items.map((sc) => h('tr', {key: `${sc.project}/${sc.workflow}`, dataset: {workflow: `${sc.project}/${sc.workflow}`}},
      h('td', {}, link(workflowHref(sc.project, sc.workflow), `${sc.project}/${sc.workflow}`)),
      h('td', {}, h('code', {}, sc.cron)),
      h('td', {}, sc.timezone || 'UTC'),
      h('td', {}, enabledBadge(sc)),
      h('td', {}, sc.catchup),
      h('td', {}, timeEl(sc.next_fire_time, sc.timezone)),
      h('td', {}, timeEl(sc.last_fire_time, sc.timezone)),
      h('td', {}, timeEl(sc.updated_at), h('span', {class: 'muted'}, ` ${sc.updated_by}`)),
      h('td', {class: 'rowactions'}, h('button', {type: 'button', class: 'small', on: {click: async () => {
        try {
          await setEnabled(sc, !sc.enabled);
          refresh();
        } catch (e) {
          flash(`Schedule of ${sc.workflow}: ${describe(e)}`);
        }
      }}}, sc.enabled ? 'Disable' : 'Enable')))) : emptyRow(9, 'No schedules. Set one on a workflow page.'));
  });
}
