// Workflows: pick (or create) a project, then its workflows.

import {api, describe, get} from './api.js';
import {emptyRow, enc, flash, go, h, link, replace, select, table, timeEl, workflowHref} from './dom.js';

const PROJECT_KEY = 'beluga.project';

export function lastProject() {
  return localStorage.getItem(PROJECT_KEY) || '';
}

export function rememberProject(name) {
  localStorage.setItem(PROJECT_KEY, name);
}

export function render(main, page, [project]) {
  if (!project) {
    // Open the project used last, when there is one.
    const last = lastProject();
    get('/api/v1/projects', {signal: page.signal}).then((r) => {
      if (!page.alive) return;
      const names = r.items.map((p) => p.name);
      if (names.includes(last)) go(`#/workflows/${enc(last)}`);
      else if (names.length) go(`#/workflows/${enc(names[0])}`);
      else show(main, page, '', []);
    }).catch((e) => {
      if (page.alive) {
        flash('projects: ' + describe(e));
        show(main, page, '', []);
      }
    });
    return;
  }
  rememberProject(project);
  get('/api/v1/projects', {signal: page.signal}).then((r) => page.alive && show(main, page, project, r.items))
    .catch((e) => {
      if (page.alive) {
        flash('projects: ' + describe(e));
        show(main, page, project, []);
      }
    });
}

function show(main, page, project, projects) {
  const names = projects.map((p) => p.name);
  if (project && !names.includes(project)) names.push(project);
  const picker = select('project', [['', names.length ? 'choose a project' : 'no projects yet'], ...names.sort()], project,
    {id: 'project-picker'});
  picker.addEventListener('change', () => picker.value && go(`#/workflows/${enc(picker.value)}`));

  const newName = h('input', {name: 'name', 'aria-label': 'New project name', placeholder: 'new project name', required: true, pattern: '[A-Za-z0-9_.\\-]{1,128}',
    title: "1 to 128 ASCII letters, digits, '_', '-' or '.'", spellcheck: 'false'});
  const newDesc = h('input', {name: 'description', 'aria-label': 'Project description', placeholder: 'description (optional)'});
  const createForm = h('form', {class: 'inline', id: 'create-project', on: {submit: async (e) => {
    e.preventDefault();
    try {
      const p = await api('POST', '/api/v1/projects', {json: {name: newName.value.trim(), description: newDesc.value}});
      go(`#/workflows/${enc(p.name)}`, `Project ${p.name} created.`);
    } catch (err) {
      flash('Create project: ' + describe(err));
    }
  }}}, newName, newDesc, h('button', {type: 'submit'}, 'Create project'));

  const desc = projects.find((p) => p.name === project);
  const {table: t, tbody} = table(['Workflow', 'Latest version', 'Updated', '']);
  replace(main,
    h('div', {class: 'titlebar'}, h('h1', {}, 'Workflows'), h('label', {class: 'picker'}, 'Project ', picker),
      project ? h('a', {class: 'button primary', href: `#/edit/${enc(project)}`, id: 'new-workflow'}, 'New workflow') : null),
    desc && desc.description ? h('p', {class: 'muted'}, desc.description) : null,
    project ? t : h('p', {}, 'Choose a project, or create one.'),
    h('details', {class: 'panel', open: !project}, h('summary', {}, 'Create a project'), createForm));
  if (!project) return;

  get(`/api/v1/projects/${enc(project)}/workflows`, {signal: page.signal}).then((r) => {
    if (!page.alive) return;
    replace(tbody, r.items.length ? r.items.map((w) => h('tr', {dataset: {workflow: w.name}},
      h('td', {}, link(workflowHref(project, w.name), w.name)),
      h('td', {class: 'num'}, `v${w.version}`),
      h('td', {}, timeEl(w.created_at)),
      h('td', {class: 'rowactions'},
        link(`#/instances?project=${enc(project)}&workflow=${enc(w.name)}`, 'instances'), ' ',
        link(`#/edit/${enc(project)}/${enc(w.name)}`, 'edit')))) : emptyRow(4, 'No workflows in this project yet.'));
  }).catch((e) => page.alive && flash(`workflows of ${project}: ${describe(e)}`));
}
