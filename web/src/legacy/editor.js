// Editor: create a workflow or a new version of one from a YAML or JSON
// spec. The API validates; its message is shown as it is.

import {api, describe, get} from './api.js';
import {enc, flash, go, h, replace, workflowHref} from './dom.js';
import {toYAML} from './yaml.js';

const TEMPLATE = `# A workflow is a DAG of shell tasks. Params reach tasks as environment variables.
description: What this workflow does
params:
  target: warehouse
tasks:
  - name: extract
    command: echo "extracting into \${target}"
  - name: load
    depends_on: [extract]
    command: |
      echo "loading"
      echo "done"
`;

// specName finds the top-level name of a YAML or JSON spec, if it has one.
function specName(text) {
  const t = text.trim();
  if (t.startsWith('{')) {
    try {
      const v = JSON.parse(t);
      return typeof v.name === 'string' ? v.name : '';
    } catch {
      return '';
    }
  }
  const m = text.match(/^name:[ \t]*["']?([A-Za-z0-9_.-]+)["']?[ \t]*(#.*)?$/m);
  return m ? m[1] : '';
}

export function render(main, page, [project, name]) {
  const existing = Boolean(name);
  const nameInput = h('input', {name: 'name', id: 'wf-name', value: name || '', readOnly: existing, spellcheck: 'false',
    placeholder: 'workflow name (or set name: in the spec)'});
  const area = h('textarea', {id: 'spec', name: 'spec', rows: 26, spellcheck: 'false', autocomplete: 'off',
    'aria-label': 'workflow spec (YAML or JSON)'});
  const format = h('span', {class: 'muted'});
  const errorBox = h('pre', {class: 'apierror', id: 'spec-error', role: 'alert', hidden: true});
  const saveBtn = h('button', {type: 'submit', class: 'primary', id: 'save-spec'}, existing ? 'Save new version' : 'Create workflow');
  const info = h('p', {class: 'muted'});

  // What was loaded (null until then); leaving with other text asks first,
  // on a hash change here and on closing or reloading the tab.
  let baseline = null;
  let saved = false;
  const dirty = () => !saved && baseline !== null && (area.value !== baseline || nameInput.value !== (name || ''));
  page.confirmLeave = () => (dirty() ? 'Leave the editor? Your changes to the spec are not saved.' : '');
  window.addEventListener('beforeunload', (e) => {
    if (dirty()) {
      e.preventDefault();
      e.returnValue = ''; // older browsers ask only when this is set
    }
  }, {signal: page.signal});

  const showFormat = () => {
    format.textContent = area.value.trim().startsWith('{') ? 'JSON' : 'YAML';
  };
  area.addEventListener('input', showFormat);
  area.addEventListener('keydown', (e) => {
    if (e.key === 'Tab' && !e.shiftKey && !e.ctrlKey && !e.metaKey && !e.altKey) {
      e.preventDefault();
      area.setRangeText('  ', area.selectionStart, area.selectionEnd, 'end');
      showFormat();
    } else if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
      e.preventDefault();
      form.requestSubmit();
    }
  });

  const form = h('form', {class: 'editor', on: {submit: save}},
    h('label', {class: 'row'}, h('span', {}, 'Name'), nameInput),
    h('div', {class: 'row'}, h('span', {}, 'Spec'), h('span', {}, format, ' · Tab indents, Ctrl+Enter saves')),
    area, errorBox,
    h('div', {class: 'buttons'}, saveBtn,
      h('a', {class: 'button', href: existing ? workflowHref(project, name) : `#/workflows/${enc(project)}`}, 'Cancel')));

  replace(main,
    h('div', {class: 'titlebar'}, h('h1', {}, existing ? `Edit ${project}/${name}` : `New workflow in ${project}`)),
    info, form);

  if (existing) {
    area.disabled = true;
    get(`/api/v1/projects/${enc(project)}/workflows/${enc(name)}`, {signal: page.signal}).then((w) => {
      if (!page.alive) return;
      area.value = toYAML(w.spec);
      baseline = area.value;
      area.disabled = false;
      info.textContent = `Editing version ${w.version}. Saving a changed spec stores version ${w.version + 1}; the running instances keep their version.`;
      showFormat();
    }).catch((e) => page.alive && flash(`${project}/${name}: ${describe(e)}`));
  } else {
    area.value = TEMPLATE;
    baseline = area.value;
    showFormat();
  }

  async function save(e) {
    e.preventDefault();
    errorBox.hidden = true;
    const text = area.value;
    const wf = nameInput.value.trim() || specName(text);
    if (!wf) {
      errorBox.textContent = 'Give the workflow a name: fill in the Name field or put name: in the spec.';
      errorBox.hidden = false;
      return;
    }
    const isJSON = text.trim().startsWith('{');
    saveBtn.disabled = true;
    try {
      const r = await api('PUT', `/api/v1/projects/${enc(project)}/workflows/${enc(wf)}`,
        {body: text, contentType: isJSON ? 'application/json' : 'application/yaml'});
      saved = true;
      go(workflowHref(project, r.name),
        r.created ? `${r.name} version ${r.version} saved.` : `No change: the spec is identical to ${r.name} version ${r.version}.`);
    } catch (err) {
      if (err.name === 'AbortError') return;
      errorBox.textContent = describe(err);
      errorBox.hidden = false;
    } finally {
      saveBtn.disabled = false;
    }
  }
}
