// Task groups: concurrency limits shared across workflows (a task with
// task_group: NAME waits for a free slot), each with its slots in use,
// created, resized and deleted here.
import {useState, type FormEvent} from 'react';
import {describe} from './api';
import {call, type TaskGroup} from './client';
import {confirmDialog, flash, formDialog} from './notify';
import {Err, Field, Meter, Time, run, useList} from './ui';

type Group = TaskGroup;

// Slots in use move as tasks run: read again this often.
const REFRESH_MS = 5000;

export function TaskGroupsPage() {
  const [items, listErr, reload] = useList<Group>('/api/v1/task-groups', REFRESH_MS);
  const [name, setName] = useState('');
  const [cap, setCap] = useState('1');
  const [desc, setDesc] = useState('');
  const [projects, setProjects] = useState('');
  const [err, setErr] = useState('');

  async function create(e: FormEvent) {
    e.preventDefault();
    const body = {name: name.trim(), capacity: Number(cap), description: desc, projects: projects.split(',').map((x) => x.trim()).filter(Boolean)};
    if (await run(() => call('POST /api/v1/task-groups', {}, body), `Task group ${body.name} created.`, setErr)) {
      setName(''); setDesc(''); setProjects(''); setCap('1'); reload();
    }
  }
  async function resize(g: Group) {
    const v = (await formDialog(`Resize task group ${g.name}`, [{name: 'capacity', label: 'Capacity', type: 'number', min: 1, value: g.capacity, required: true}], 'Resize')) as {capacity: string} | null;
    if (!v) return;
    try {
      await call('PATCH /api/v1/task-groups/{name}', {name: g.name}, {capacity: Number(v.capacity)});
      flash(`Task group ${g.name} now has ${v.capacity} slots.`, 'ok');
      reload();
    } catch (ex) { flash(`Resize ${g.name}: ${describe(ex)}`); }
  }
  async function del(g: Group) {
    if (!await confirmDialog(`Delete task group ${g.name}?`, 'Tasks naming it wait until a group of that name exists again.', 'Delete')) return;
    try { await call('DELETE /api/v1/task-groups/{name}', {name: g.name}); flash(`Task group ${g.name} deleted.`, 'ok'); reload(); }
    catch (ex) { flash(`Delete ${g.name}: ${describe(ex)}`); }
  }

  return (
    <div className="admin taskgroups">
      <h1>Task groups</h1>
      <p className="hint">A task with <code>task_group: NAME</code> waits for a free slot of that group, across every workflow and project.</p>
      <Err text={listErr} />
      <table className="grid groups">
        <thead><tr><th>Task group</th><th>In use / capacity</th><th>Description</th><th>Projects</th><th>Created</th><th></th></tr></thead>
        <tbody>{items === null ? <tr className="empty"><td colSpan={6}>Loading…</td></tr> : items.length ? items.map((g) => (
          <tr key={g.name} data-group={g.name}>
            <td>{g.name}</td><td><Meter used={g.in_use} capacity={g.capacity} /></td><td>{g.description}</td>
            <td>{g.projects?.length ? g.projects.join(', ') : <span className="muted">admins only</span>}</td><td><Time iso={g.created_at} /></td>
            <td className="rowactions"><button type="button" className="small" onClick={() => resize(g)}>Resize</button>
              <button type="button" className="small danger" onClick={() => del(g)}>Delete</button></td>
          </tr>
        )) : <tr className="empty"><td colSpan={6}>No task groups yet: create one below.</td></tr>}</tbody>
      </table>
      <form className="panel form inline" id="create-group" onSubmit={create} aria-label="create a task group">
        <Field id="group-name" label="Name"><input id="group-name" value={name} onChange={(e) => setName(e.target.value)} required spellCheck={false} autoComplete="off" /></Field>
        <Field id="group-capacity" label="Capacity"><input id="group-capacity" className="narrow" type="number" min={1} value={cap} onChange={(e) => setCap(e.target.value)} required /></Field>
        <Field id="group-desc" label="Description"><input id="group-desc" value={desc} onChange={(e) => setDesc(e.target.value)} placeholder="optional" /></Field>
        <Field id="group-projects" label="Projects"><input id="group-projects" value={projects} onChange={(e) => setProjects(e.target.value)} spellCheck={false}
          placeholder="comma-separated; empty: admins' workflows only" /></Field>
        <button type="submit" className="primary">Create group</button>
        <Err text={err} />
      </form>
    </div>
  );
}
