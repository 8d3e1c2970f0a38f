// Instances: every run, newest first, filtered by project, workflow and
// state, a page at a time, following the event stream while visible.

import {describe, get} from './api.js';
import {WORKFLOW_STATES, badge, duration, emptyRow, enc, flash, go, h, link, patch, replace, select, table,
  timeEl, workflowHref} from './dom.js';

const LIMIT = 50;

// fillPickers fills the project and workflow filters of a list page once,
// leaving out the current choice (already the first option); a failure
// leaves the choice in place and says so.
export function fillPickers(page, f, projectSel, workflowSel) {
  get('/api/v1/projects', {signal: page.signal}).then((r) => {
    for (const p of r.items) if (p.name !== f.project) projectSel.append(h('option', {value: p.name}, p.name));
  }).catch((e) => page.alive && flash('projects: ' + describe(e)));
  if (f.project) {
    get(`/api/v1/projects/${enc(f.project)}/workflows`, {signal: page.signal}).then((r) => {
      for (const w of r.items) if (w.name !== f.workflow) workflowSel.append(h('option', {value: w.name}, w.name));
    }).catch((e) => page.alive && flash('workflows: ' + describe(e)));
  }
}

// trigger says how a run began: by hand, by a schedule for a time, a backfill.
export function trigger(in_) {
  const out = [h('span', {}, in_.command_type)];
  if (in_.schedule_id) out.push(h('span', {class: 'muted', title: 'the schedule that fired it'}, ` #${in_.schedule_id}`));
  if (in_.backfill_id) out.push(' ', link(`#/backfills/${in_.backfill_id}`, `#${in_.backfill_id}`, {title: 'the backfill it runs a time of'}));
  if (in_.schedule_time) out.push(' for ', timeEl(in_.schedule_time, in_.timezone));
  if (in_.dry_run) out.push(h('span', {class: 'tag'}, 'dry run'));
  return out;
}

export function render(main, page, _args, query) {
  const f = {
    project: query.get('project') || '',
    workflow: query.get('workflow') || '',
    state: query.get('state') || '',
    offset: Math.max(0, parseInt(query.get('offset') || '0', 10) || 0),
  };
  const hrefWith = (changes) => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries({...f, ...changes})) if (v) q.set(k, String(v));
    const qs = q.toString();
    return '#/instances' + (qs ? '?' + qs : '');
  };

  const projectSel = select('project', [['', 'all projects']], f.project);
  const workflowSel = select('workflow', [['', 'all workflows']], f.workflow, {disabled: !f.project});
  const stateSel = select('state', [['', 'any state'], ...WORKFLOW_STATES], f.state);
  if (f.project) projectSel.append(h('option', {value: f.project, selected: true}, f.project));
  if (f.workflow) workflowSel.append(h('option', {value: f.workflow, selected: true}, f.workflow));
  projectSel.addEventListener('change', () => go(hrefWith({project: projectSel.value, workflow: '', offset: 0})));
  workflowSel.addEventListener('change', () => go(hrefWith({workflow: workflowSel.value, offset: 0})));
  stateSel.addEventListener('change', () => go(hrefWith({state: stateSel.value, offset: 0})));

  const {table: t, tbody} = table(['ID', 'Workflow', 'Ver', 'State', 'Trigger', 'Started', 'Duration', 'Host']);
  const pager = h('div', {class: 'pager'});
  replace(main,
    h('div', {class: 'titlebar'}, h('h1', {}, 'Instances'),
      h('form', {class: 'filters', on: {submit: (e) => e.preventDefault()}},
        projectSel, workflowSel, stateSel,
        (f.project || f.workflow || f.state) ? link('#/instances', 'clear filters') : null)),
    t, pager);

  fillPickers(page, f, projectSel, workflowSel);

  // The list follows the instance events of the stream (kinds=instance:
  // none of the task events), reading its page again when one comes; it
  // polls only while the stream is down.
  const ev = new URLSearchParams({kinds: 'instance'});
  for (const k of ['project', 'workflow']) if (f[k]) ev.set(k, f[k]);
  page.follow('/api/v1/events?' + ev, async () => {
    const q = new URLSearchParams({limit: LIMIT, offset: f.offset});
    for (const k of ['project', 'workflow', 'state']) if (f[k]) q.set(k, f[k]);
    const list = await get('/api/v1/instances?' + q, {signal: page.signal});
    if (!page.alive) return;
    patch(tbody, list.items.length ? list.items.map((i) => h('tr', {key: i.id, dataset: {id: i.id}},
      h('td', {}, link(`#/instances/${i.id}`, `#${i.id}`)),
      h('td', {}, link(workflowHref(i.project, i.workflow), `${i.project}/${i.workflow}`)),
      h('td', {class: 'num'}, `v${i.version}`),
      h('td', {}, badge(i.state)),
      h('td', {}, trigger(i)),
      h('td', {}, timeEl(i.start_time)),
      h('td', {class: 'num'}, duration(i.start_time, i.end_time)),
      h('td', {}, i.host))) : emptyRow(8, 'No instances match.'));
    const from = list.total ? list.offset + 1 : 0;
    const to = list.offset + list.items.length;
    patch(pager,
      h('span', {}, `${from}–${to} of ${list.total}`),
      f.offset > 0 ? link(hrefWith({offset: Math.max(0, f.offset - LIMIT)}), '‹ newer') : h('span', {class: 'muted'}, '‹ newer'),
      to < list.total ? link(hrefWith({offset: f.offset + LIMIT}), 'older ›') : h('span', {class: 'muted'}, 'older ›'));
  });
}
