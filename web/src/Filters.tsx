// Filters is the project, workflow and state pickers of a list page,
// kept in the page's address (hash query): a change navigates, so the
// filtered list can be linked and reloaded.
import {go} from './notify';
import {enc, useList} from './ui';

export type FilterValues = {project: string; workflow: string; state: string};

// hrefWith is the list page's address with some filters (and the offset) changed.
export function hrefWith(base: string, f: Record<string, string | number>, changes: Record<string, string | number>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries({...f, ...changes})) if (v) q.set(k, String(v));
  const qs = q.toString();
  return base + (qs ? '?' + qs : '');
}

export function Filters({base, f, states, extra = {}}: {base: string; f: FilterValues; states: readonly string[]; extra?: Record<string, string | number>}) {
  const [projects] = useList<{name: string}>('/api/v1/projects');
  const [workflows] = useList<{name: string}>(f.project ? `/api/v1/projects/${enc(f.project)}/workflows` : null);
  const to = (changes: Record<string, string | number>) => go(hrefWith(base, {...f, ...extra}, changes));
  const opts = (list: {name: string}[] | null, cur: string) => [...new Set([...(cur ? [cur] : []), ...(list || []).map((x) => x.name)])];
  return (
    <form className="filters" onSubmit={(e) => e.preventDefault()}>
      <select name="project" aria-label="Project" value={f.project} onChange={(e) => to({project: e.target.value, workflow: '', offset: 0})}>
        <option value="">all projects</option>{opts(projects, f.project).map((p) => <option key={p} value={p}>{p}</option>)}</select>
      <select name="workflow" aria-label="Workflow" value={f.workflow} disabled={!f.project} onChange={(e) => to({workflow: e.target.value, offset: 0})}>
        <option value="">all workflows</option>{opts(workflows, f.workflow).map((w) => <option key={w} value={w}>{w}</option>)}</select>
      <select name="state" aria-label="State" value={f.state} onChange={(e) => to({state: e.target.value, offset: 0})}>
        <option value="">any state</option>{states.map((s) => <option key={s} value={s}>{s}</option>)}</select>
      {f.project || f.workflow || f.state ? <a href={base}>clear filters</a> : null}
    </form>
  );
}
