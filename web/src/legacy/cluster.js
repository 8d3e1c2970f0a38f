// Cluster: masters (the leader marked), workers with their load, and task
// groups (the concurrency limits shared across workflows).

import {api, describe, get} from './api.js';
import {confirmDialog, emptyRow, flash, formDialog, h, patch, replace, table, timeEl} from './dom.js';

function pct(v) {
  return `${Math.round(v * 10) / 10}%`;
}

function meter(used, capacity) {
  const frac = capacity > 0 ? Math.min(1, used / capacity) : 0;
  const m = h('meter', {min: 0, max: 1, value: frac, low: 0.7, high: 0.9, optimum: 0});
  return h('span', {class: 'meterbox'}, m, ` ${used} / ${capacity}`);
}

export function render(main, page) {
  const leader = h('p', {class: 'muted'});
  const mt = table(['Address', 'Role', 'Epoch', 'Since'], 'masters');
  const wt = table(['Address', 'Groups', 'Running / slots', 'CPU', 'Memory', 'Load', 'Started', 'Last heartbeat'], 'workers');
  const gt = table(['Task group', 'In use / capacity', 'Description', 'Created', ''], 'groups');

  const name = h('input', {name: 'name', 'aria-label': 'Task group name', placeholder: 'name', required: true, spellcheck: 'false', id: 'group-name'});
  const cap = h('input', {name: 'capacity', 'aria-label': 'Capacity', type: 'number', min: 1, value: 1, required: true, class: 'narrow', id: 'group-capacity'});
  const desc = h('input', {name: 'description', 'aria-label': 'Description', placeholder: 'description (optional)'});
  const create = h('form', {class: 'inline', id: 'create-group', on: {submit: async (e) => {
    e.preventDefault();
    try {
      const g = await api('POST', '/api/v1/task-groups', {json: {name: name.value.trim(), capacity: Number(cap.value), description: desc.value}});
      flash(`Task group ${g.name} created.`, 'ok');
      name.value = '';
      desc.value = '';
      refreshGroups();
    } catch (err) {
      flash('Create task group: ' + describe(err));
    }
  }}}, name, cap, desc, h('button', {type: 'submit'}, 'Create group'));

  replace(main,
    h('div', {class: 'titlebar'}, h('h1', {}, 'Cluster'), leader),
    h('h2', {}, 'Masters'), mt.table,
    h('h2', {}, 'Workers'), wt.table,
    h('h2', {}, 'Task groups'),
    h('p', {class: 'hint'}, 'A task with task_group: NAME waits for a free slot of that group, across every workflow and project.'),
    gt.table, create);

  page.poll(async () => {
    const c = await get('/api/v1/cluster', {signal: page.signal});
    if (!page.alive) return;
    leader.textContent = c.leader ? `leader: ${c.leader}` : 'no leader elected';
    patch(mt.tbody, c.masters.length ? c.masters.map((m) => h('tr', {key: m.address, class: m.role === 'active' ? 'leader' : ''},
      h('td', {}, m.address, m.address === c.leader ? h('span', {class: 'tag leader'}, 'leader') : null),
      h('td', {}, h('span', {class: ['badge', m.role === 'active' ? 'st-running' : 'st-none']}, m.role)),
      h('td', {class: 'num'}, m.epoch ? String(m.epoch) : ''),
      h('td', {}, timeEl(m.since)))) : emptyRow(4, 'No master is registered.'));
    patch(wt.tbody, c.workers.length ? c.workers.map((w) => h('tr', {key: w.address, dataset: {worker: w.address}},
      h('td', {}, w.address, w.overloaded ? h('span', {class: 'tag overloaded', title: w.overload_reason || ''}, 'overloaded') : null,
        w.skipped && !w.overloaded ? h('span', {class: 'tag skipped', title: w.skip_reason || ''}, 'skipped') : null),
      h('td', {}, (w.groups || []).join(', ')),
      h('td', {title: `${w.free_slots ?? ''} free, ${w.in_flight ?? ''} in flight${w.skip_reason ? '; skipped: ' + w.skip_reason : ''}`},
        meter(w.running, w.capacity)),
      h('td', {class: 'num'}, pct(w.cpu)),
      h('td', {class: 'num'}, pct(w.memory)),
      h('td', {class: 'num'}, w.load.toFixed(2)),
      h('td', {}, timeEl(w.start_time)),
      h('td', {}, timeEl(w.last_heartbeat)))) : emptyRow(8, 'No worker is registered: tasks wait until one joins.'));
  });

  const refreshGroups = page.poll(async () => {
    const r = await get('/api/v1/task-groups', {signal: page.signal});
    if (!page.alive) return;
    patch(gt.tbody, r.items.length ? r.items.map((g) => h('tr', {key: g.name, dataset: {group: g.name}},
      h('td', {}, g.name),
      h('td', {}, meter(g.in_use, g.capacity)),
      h('td', {}, g.description),
      h('td', {}, timeEl(g.created_at)),
      h('td', {class: 'rowactions'},
        h('button', {type: 'button', class: 'small', on: {click: () => resize(g)}}, 'Resize'),
        h('button', {type: 'button', class: 'small danger', on: {click: () => del(g)}}, 'Delete')))) : emptyRow(5, 'No task groups.'));
  });

  async function resize(g) {
    const v = await formDialog(`Resize task group ${g.name}`, [{name: 'capacity', label: 'Capacity', type: 'number', min: 1, value: g.capacity, required: true}], 'Resize');
    if (!v) return;
    try {
      await api('PATCH', `/api/v1/task-groups/${encodeURIComponent(g.name)}`, {json: {capacity: Number(v.capacity)}});
      flash(`Task group ${g.name} now has ${v.capacity} slots.`, 'ok');
      refreshGroups();
    } catch (e) {
      flash(`Resize ${g.name}: ${describe(e)}`);
    }
  }

  async function del(g) {
    if (!await confirmDialog(`Delete task group ${g.name}?`, 'Tasks naming it wait until a group of that name exists again.', 'Delete')) return;
    try {
      await api('DELETE', `/api/v1/task-groups/${encodeURIComponent(g.name)}`);
      flash(`Task group ${g.name} deleted.`, 'ok');
      refreshGroups();
    } catch (e) {
      flash(`Delete ${g.name}: ${describe(e)}`);
    }
  }
}
