// Workflow: one workflow's DAG and spec, its versions, a form to run it,
// its schedule, a form to backfill it, and edit/delete.

import {api, describe, get} from './api.js';
import {PRIORITIES, confirmDialog, enc, flash, go, h, kvEditor, link, replace, select, table, timeEl,
  workflowHref} from './dom.js';
import {drawDag} from './dag.js';
import {backfillPanel} from './backfills.js';
import {schedulePanel} from './schedules.js';
import {toYAML} from './yaml.js';

export function render(main, page, [project, name], query) {
  const base = `/api/v1/projects/${enc(project)}/workflows/${enc(name)}`;
  const version = parseInt(query.get('version') || '0', 10) || 0;
  Promise.all([
    get(base + (version ? `?version=${version}` : ''), {signal: page.signal}),
    get(base + '/versions', {signal: page.signal}),
  ]).then(([wf, versions]) => page.alive && show(main, page, project, name, wf, versions.items))
    .catch((e) => {
      if (!page.alive || e.name === 'AbortError') return;
      replace(main, h('h1', {}, `${project}/${name}`),
        h('p', {class: 'apierror', role: 'alert'}, describe(e)),
        h('p', {}, link(`#/workflows/${enc(project)}`, `Back to the workflows of ${project}`)));
    });
}

function show(main, page, project, name, wf, versions) {
  const base = `/api/v1/projects/${enc(project)}/workflows/${enc(name)}`;
  const spec = wf.spec || {tasks: []};
  const latest = versions.reduce((m, v) => Math.max(m, v.version), 0);

  async function del() {
    if (!await confirmDialog(`Delete ${project}/${name}?`,
      'Every version and the schedule of this workflow are deleted. Its past instances stay.', 'Delete')) return;
    try {
      await api('DELETE', base);
      go(`#/workflows/${enc(project)}`, `Workflow ${name} deleted.`);
    } catch (e) {
      flash(`Delete ${name}: ${describe(e)}`);
    }
  }

  // Spec, as YAML by default.
  const specPre = h('pre', {class: 'spec', id: 'spec-text'}, toYAML(spec));
  let asJSON = false;
  const toggle = h('button', {type: 'button', class: 'small', on: {click: () => {
    asJSON = !asJSON;
    specPre.textContent = asJSON ? JSON.stringify(spec, null, 2) : toYAML(spec);
    toggle.textContent = asJSON ? 'show YAML' : 'show JSON';
  }}}, 'show JSON');

  const vt = table(['Version', 'Spec hash', 'Created', '']);
  replace(vt.tbody, [...versions].sort((a, b) => b.version - a.version).map((v) => h('tr', {class: v.version === wf.version ? 'current' : ''},
    h('td', {class: 'num'}, `v${v.version}`),
    h('td', {}, h('code', {}, v.spec_hash.slice(0, 12))),
    h('td', {}, timeEl(v.created_at)),
    h('td', {}, v.version === wf.version ? h('span', {class: 'muted'}, 'shown') : link(`${workflowHref(project, name)}?version=${v.version}`, 'show')))));

  const tasks = spec.tasks || [];
  const backfill = backfillPanel(project, name, spec);
  replace(main,
    h('div', {class: 'titlebar'},
      h('h1', {}, link(`#/workflows/${enc(project)}`, project), ' / ', name, h('span', {class: 'muted'}, ` v${wf.version}`)),
      h('div', {class: 'actions'},
        link(`#/instances?project=${enc(project)}&workflow=${enc(name)}`, 'Instances', {class: 'button'}),
        link(`#/backfills?project=${enc(project)}&workflow=${enc(name)}`, 'Backfills', {class: 'button'}),
        link(`#/edit/${enc(project)}/${enc(name)}`, 'Edit', {class: 'button', id: 'edit-workflow'}),
        h('button', {type: 'button', class: 'danger', id: 'delete-workflow', on: {click: del}}, 'Delete'))),
    wf.version !== latest ? h('p', {class: 'note'}, `Showing version ${wf.version}; the latest is `,
      link(workflowHref(project, name), `version ${latest}`), '.') : null,
    spec.description ? h('p', {}, spec.description) : null,
    h('div', {class: 'cols'},
      h('div', {class: 'col'},
        h('h2', {}, 'DAG'),
        h('div', {class: 'dagbox'}, tasks.length ? drawDag(tasks, (n) => {
          const t = tasks.find((x) => x.name === n);
          const first = (t.command || '').split('\n').map((l) => l.trim()).find((l) => l && l !== 'set -eu' && l !== 'set -e') || '';
          return {state: 'none', label: first, title: `${n}\n${t.command}`};
        }) : h('p', {class: 'muted'}, 'No tasks.')),
        h('div', {class: 'titlebar'}, h('h2', {}, 'Spec'), toggle), specPre,
        h('h2', {}, 'Versions'), vt.table),
      h('div', {class: 'col side'},
        runForm(project, name, spec, versions, wf.version === latest ? 0 : wf.version),
        schedulePanel(page, project, name, spec, backfill.setSchedule),
        backfill.el)));
}

function runForm(project, name, spec, versions, version) {
  const params = kvEditor({}, spec.params || {});
  const tasks = (spec.tasks || []).map((t) => t.name);
  const scope = select('scope', [['only', 'only these'], ['upstream', 'and upstream'], ['downstream', 'and downstream']], 'only', {disabled: true});
  const nodes = h('div', {class: 'checks'}, tasks.map((t) => h('label', {}, h('input', {type: 'checkbox', name: 'start_node', value: t,
    on: {change: () => { scope.disabled = !nodes.querySelector('input:checked'); }}}), ' ', t)));
  const versionSel = select('version', [['0', 'latest'], ...[...versions].sort((a, b) => b.version - a.version).map((v) => [String(v.version), `v${v.version}`])],
    String(version));
  const prio = select('priority', [['', `workflow's (${spec.priority || 'medium'})`], ...PRIORITIES], '');
  const group = h('input', {name: 'worker_group', placeholder: spec.worker_group || 'default', spellcheck: 'false'});
  const dry = h('input', {type: 'checkbox', name: 'dry_run'});
  const btn = h('button', {type: 'submit', class: 'primary', id: 'run-submit'}, 'Run');

  async function submit(e) {
    e.preventDefault();
    const body = {};
    const p = params.get();
    if (Object.keys(p).length) body.params = p;
    if (versionSel.value !== '0') body.version = Number(versionSel.value);
    if (prio.value) body.priority = prio.value;
    if (group.value.trim()) body.worker_group = group.value.trim();
    const start = [...nodes.querySelectorAll('input:checked')].map((x) => x.value);
    if (start.length) {
      body.start_nodes = start;
      body.scope = scope.value;
    }
    if (dry.checked) body.dry_run = true;
    btn.disabled = true;
    try {
      const inst = await api('POST', `/api/v1/projects/${enc(project)}/workflows/${enc(name)}/runs`, {json: body});
      go(`#/instances/${inst.id}`, `Instance #${inst.id} submitted.`);
    } catch (err) {
      flash(`Run ${name}: ${describe(err)}`);
    } finally {
      btn.disabled = false;
    }
  }

  return h('form', {class: 'panel form', id: 'run-form', on: {submit}},
    h('h2', {}, 'Run'),
    h('div', {class: 'field'}, h('span', {}, 'Params'), params.el),
    h('label', {class: 'field'}, h('span', {}, 'Version'), versionSel),
    h('label', {class: 'field'}, h('span', {}, 'Priority'), prio),
    h('label', {class: 'field'}, h('span', {}, 'Worker group'), group),
    tasks.length ? h('div', {class: 'field'}, h('span', {}, 'Start nodes'), h('div', {}, nodes, scope)) : null,
    h('label', {class: 'field'}, h('span', {}, 'Dry run'), h('span', {}, dry, ' record every task as succeeded without running it')),
    h('div', {class: 'buttons'}, btn));
}
