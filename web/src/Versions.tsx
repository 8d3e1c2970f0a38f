// The versions of a workflow, and the diff of any two as the server makes
// it (GET .../diff): the graph with its tasks coloured added, removed or
// changed, what changed field by field, and the spec's unified diff.
import {useEffect, useState} from 'react';
import {describe, get} from './api';
import {Time, enc} from './ui';

type V = {version: number; spec_hash: string; created_at: string; git_commit?: string};
type Change = {field: string; from: unknown; to: unknown};
type Edge = {from: string; to: string};
export type VersionDiff = {
  from: {version: number; git_commit?: string}; to: {version: number; git_commit?: string}; same: boolean;
  workflow_fields: Change[]; tasks_added: string[]; tasks_removed: string[];
  tasks_changed: {name: string; changes: Change[]}[]; edges_added: Edge[]; edges_removed: Edge[];
  text: string; text_omitted?: string;
};
type SpecTask = {name: string; depends_on?: string[]};

const show = (v: unknown) => (v === null || v === undefined ? '(none)' : JSON.stringify(v));
const short = (c?: string) => (c ? c.slice(0, 12) : '');

export function Versions({project, name, from}: {project: string; name: string; from?: number}) {
  const base = `/api/v1/projects/${enc(project)}/workflows/${enc(name)}`;
  const [list, setList] = useState<V[]>([]);
  const [a, setA] = useState(0);
  const [b, setB] = useState(0);
  const [specs, setSpecs] = useState<Record<number, SpecTask[]>>({});
  const [diff, setDiff] = useState<VersionDiff | null>(null);
  const [err, setErr] = useState('');
  useEffect(() => {
    get(base + '/versions').then((r: {items: V[]}) => {
      const items = [...r.items].sort((x, y) => y.version - x.version);
      setList(items);
      if (items.length) {
        setB(items[0].version);
        setA(from && items.some((v) => v.version === from) ? from : items[Math.min(1, items.length - 1)].version);
      }
    }).catch((e: unknown) => setErr(describe(e)));
  }, [base, from]);
  useEffect(() => {
    if (!a || !b) return;
    setDiff(null);
    get(`${base}/diff?from=${a}&to=${b}`).then((d: VersionDiff) => setDiff(d)).catch((e: unknown) => setErr(describe(e)));
    for (const v of [a, b]) if (!specs[v]) {
      get(`${base}?version=${v}`).then((w: any) => setSpecs((s) => ({...s, [v]: w.spec?.tasks || []}))).catch((e: unknown) => setErr(describe(e)));
    }
  }, [a, b]); // eslint-disable-line react-hooks/exhaustive-deps
  const ta = specs[a], tb = specs[b];
  return (
    <div className="versions">
      {err ? <p className="apierror" role="alert">{err}</p> : null}
      <table className="grid vlist">
        <thead><tr><th>Version</th><th>Spec hash</th><th>Git commit</th><th>Created</th><th>From</th><th>To</th></tr></thead>
        <tbody>{list.map((v) => (
          <tr key={v.version} data-version={v.version}>
            <td className="num">v{v.version}</td><td><code>{v.spec_hash.slice(0, 12)}</code></td>
            <td>{v.git_commit ? <code title={v.git_commit}>{short(v.git_commit)}</code> : null}</td><td><Time iso={v.created_at} /></td>
            <td><input type="radio" name="from" aria-label={`diff from v${v.version}`} checked={a === v.version} onChange={() => setA(v.version)} /></td>
            <td><input type="radio" name="to" aria-label={`diff to v${v.version}`} checked={b === v.version} onChange={() => setB(v.version)} /></td>
          </tr>))}</tbody>
      </table>
      {diff ? <div className="graphdiff" id="graph-diff">
        <h2>Graph: v{diff.from.version} → v{diff.to.version}{diff.same ? ' (no differences)' : ''}</h2>
        {ta && tb ? <DiffGraph a={ta} b={tb} d={diff} /> : null}
        <ul>
          <li>tasks added: {diff.tasks_added.join(', ') || 'none'}</li>
          <li>tasks removed: {diff.tasks_removed.join(', ') || 'none'}</li>
          <li>tasks changed: {diff.tasks_changed.map((t) => t.name).join(', ') || 'none'}</li>
          <li>dependencies added: {diff.edges_added.map((e) => `${e.from} → ${e.to}`).join('; ') || 'none'}</li>
          <li>dependencies removed: {diff.edges_removed.map((e) => `${e.from} → ${e.to}`).join('; ') || 'none'}</li>
        </ul>
        {diff.workflow_fields.length || diff.tasks_changed.length ? <table className="grid" id="field-changes">
          <thead><tr><th>Where</th><th>Field</th><th>From</th><th>To</th></tr></thead>
          <tbody>
            {diff.workflow_fields.map((c) => <tr key={'w' + c.field}><td>workflow</td><td>{c.field}</td><td><code>{show(c.from)}</code></td><td><code>{show(c.to)}</code></td></tr>)}
            {diff.tasks_changed.flatMap((t) => t.changes.map((c) => <tr key={t.name + c.field}><td>task {t.name}</td><td>{c.field}</td>
              <td><code>{show(c.from)}</code></td><td><code>{show(c.to)}</code></td></tr>))}
          </tbody>
        </table> : null}
      </div> : null}
      {diff?.text ? <pre className="diff" id="spec-diff" aria-label={`spec diff v${diff.from.version} to v${diff.to.version}`}>{diff.text.split('\n').map((l, i) =>
        <div key={i} className={l.startsWith('+') && !l.startsWith('+++') ? 'add' : l.startsWith('-') && !l.startsWith('---') ? 'del' : l.startsWith('@@') ? 'hunk' : ''}>{l}</div>)}</pre> : null}
      {diff?.text_omitted ? <p className="muted">Text diff omitted: {diff.text_omitted}</p> : null}
    </div>
  );
}

// DiffGraph draws the union of both versions' tasks in columns by depth,
// each coloured by what the diff says of it.
function DiffGraph({a, b, d}: {a: SpecTask[]; b: SpecTask[]; d: VersionDiff}) {
  const status = new Map<string, string>();
  for (const t of [...a, ...b]) status.set(t.name, 'same');
  for (const n of d.tasks_added) status.set(n, 'added');
  for (const n of d.tasks_removed) status.set(n, 'removed');
  for (const t of d.tasks_changed) status.set(t.name, 'changed');
  const ups = new Map<string, Set<string>>();
  for (const t of [...a, ...b]) for (const u of t.depends_on || []) (ups.get(t.name) || ups.set(t.name, new Set()).get(t.name)!).add(u);
  const depth = new Map<string, number>();
  const depthOf = (n: string, seen: Set<string>): number => {
    if (depth.has(n)) return depth.get(n)!;
    if (seen.has(n)) return 0; // the union of two acyclic graphs may cycle
    seen.add(n);
    let dd = 0;
    for (const u of ups.get(n) || []) dd = Math.max(dd, depthOf(u, seen) + 1);
    depth.set(n, dd);
    return dd;
  };
  const cols: string[][] = [];
  for (const n of status.keys()) (cols[depthOf(n, new Set())] ||= []).push(n);
  if (status.size > 2000) return <p className="muted">{status.size} tasks: the graph is not drawn; the lists below say what changed.</p>;
  const edgeMark = new Map<string, string>();
  for (const e of d.edges_added) edgeMark.set(`${e.from}>${e.to}`, 'added');
  for (const e of d.edges_removed) edgeMark.set(`${e.from}>${e.to}`, 'removed');
  return (
    <div className="gd" role="img" aria-label="graph diff">
      {cols.map((col, i) => <div className="gd-col" key={i}>{(col || []).map((n) =>
        <div key={n} className={`gd-node gd-${status.get(n)}`} data-task={n} data-status={status.get(n)}
          title={[...(ups.get(n) || [])].map((u) => `after ${u}${edgeMark.get(`${u}>${n}`) ? ` (${edgeMark.get(`${u}>${n}`)})` : ''}`).join(', ')}>
          {status.get(n) === 'added' ? '+ ' : status.get(n) === 'removed' ? '− ' : status.get(n) === 'changed' ? '~ ' : ''}{n}
        </div>)}</div>)}
      <div className="gd-legend"><span className="gd-node gd-added">added</span><span className="gd-node gd-removed">removed</span>
        <span className="gd-node gd-changed">changed</span><span className="gd-node gd-same">unchanged</span></div>
    </div>
  );
}
