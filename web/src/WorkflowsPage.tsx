// Workflows: pick (or create) a project, then its workflows, a page at a
// time by name (keyset cursors) with a search by name prefix. Without a
// project in the address it opens the one used last (or the first).
import {useEffect, useState, type FormEvent} from 'react';
import {api, describe} from './api';
import {Pager, PrefixBox, usePaged, usePrefix} from './Paged';
import {go} from './notify';
import {Err, Time, enc, useList} from './ui';
import {GitPanel} from './GitPanel';

type Project = {name: string; description?: string};
type Workflow = {name: string; version: number; created_at: string};

const PROJECT_KEY = 'beluga.project';
const NAME = '[A-Za-z0-9_.\\-]{1,128}';

export function WorkflowsPage({project, query}: {project?: string; query: URLSearchParams}) {
  const [projects, projErr] = useList<Project>('/api/v1/projects');
  const [typed, prefix, setTyped] = usePrefix(query.get('prefix') || '');
  const paged = usePaged<Workflow>(project ? `/api/v1/projects/${enc(project)}/workflows` : null, prefix);
  const {items: workflows, err: wfErr} = paged;
  const [name, setName] = useState('');
  const [desc, setDesc] = useState('');
  const [err, setErr] = useState('');

  useEffect(() => {
    if (project) { localStorage.setItem(PROJECT_KEY, project); return; }
    if (!projects?.length) return;
    const last = localStorage.getItem(PROJECT_KEY) || '';
    const names = projects.map((p) => p.name);
    go(`#/workflows/${enc(names.includes(last) ? last : names[0])}`);
  }, [project, projects]);

  async function create(e: FormEvent) {
    e.preventDefault();
    setErr('');
    try {
      const p = await api('POST', '/api/v1/projects', {json: {name: name.trim(), description: desc}});
      go(`#/workflows/${enc(p.name)}`, `Project ${p.name} created.`);
    } catch (ex) { setErr('Create project: ' + describe(ex)); }
  }

  const names = (projects || []).map((p) => p.name);
  if (project && !names.includes(project)) names.push(project);
  const about = projects?.find((p) => p.name === project)?.description;
  return (
    <div className="workflows">
      <div className="titlebar"><h1>Workflows</h1>
        <label className="picker">Project <select id="project-picker" name="project" value={project || ''}
          onChange={(e) => { if (e.target.value) go(`#/workflows/${enc(e.target.value)}`); }}>
          <option value="">{names.length ? 'choose a project' : 'no projects yet'}</option>
          {[...names].sort().map((n) => <option key={n} value={n}>{n}</option>)}</select></label>
        {project ? <a className="button primary" href={`#/edit/${enc(project)}`} id="new-workflow">New workflow</a> : null}
      </div>
      <Err text={projErr && 'projects: ' + projErr} />
      {about ? <p className="muted">{about}</p> : null}
      {project ? <GitPanel key={project} project={project} /> : null}
      {project ? <>
        <div className="toolbar"><PrefixBox id="wf-prefix" label="Find workflow" value={typed} onChange={setTyped} /></div>
        <Err text={wfErr && `workflows of ${project}: ${wfErr}`} />
        <table className="grid workflows">
          <thead><tr><th>Workflow</th><th>Latest version</th><th>Updated</th><th></th></tr></thead>
          <tbody>{workflows === null ? <tr className="empty"><td colSpan={4}>Loading…</td></tr> : workflows.length ? workflows.map((w) => (
            <tr key={w.name} data-workflow={w.name}>
              <td><a href={`#/workflows/${enc(project)}/${enc(w.name)}`}>{w.name}</a></td>
              <td className="num">v{w.version}</td><td><Time iso={w.created_at} /></td>
              <td className="rowactions"><a href={`#/instances?project=${enc(project)}&workflow=${enc(w.name)}`}>instances</a>{' '}
                <a href={`#/edit/${enc(project)}/${enc(w.name)}`}>edit</a></td>
            </tr>
          )) : prefix ? <tr className="empty"><td colSpan={4}>No workflow of {project} starts with <code>{prefix}</code>.</td></tr>
            : <tr className="empty"><td colSpan={4}>No workflows in this project yet: <a href={`#/edit/${enc(project)}`}>make the first one</a>.</td></tr>}</tbody>
        </table>
        <Pager p={paged} what="workflows" />
      </> : <p>{projects === null ? 'Loading…' : names.length ? 'Choose a project, or create one.' : 'No projects yet: create the first one below, then add a workflow to it.'}</p>}
      <details className="panel" open={!project}>
        <summary>Create a project</summary>
        <form className="inline" id="create-project" onSubmit={create}>
          <input name="name" aria-label="New project name" placeholder="new project name" required pattern={NAME} spellCheck={false}
            title="1 to 128 ASCII letters, digits, '_', '-' or '.'" value={name} onChange={(e) => setName(e.target.value)} />
          <input name="description" aria-label="Project description" placeholder="description (optional)" value={desc} onChange={(e) => setDesc(e.target.value)} />
          <button type="submit">Create project</button>
        </form>
        <Err text={err} />
      </details>
    </div>
  );
}
