// The versions of a workflow, and the diff of any two: the spec line by
// line and the graph (tasks and dependencies added, removed, changed).
import {useEffect, useState} from 'react';
import {describe, get} from './api';
import {toYAML} from './yaml';
import {diffLines, graphDiff} from './spec';
import {Time, enc} from './ui';

type V = {version: number; spec_hash: string; created_at: string};

export function Versions({project, name}: {project: string; name: string}) {
  const base = `/api/v1/projects/${enc(project)}/workflows/${enc(name)}`;
  const [list, setList] = useState<V[]>([]);
  const [a, setA] = useState(0);
  const [b, setB] = useState(0);
  const [specs, setSpecs] = useState<Record<number, any>>({});
  const [err, setErr] = useState('');
  useEffect(() => {
    get(base + '/versions').then((r: {items: V[]}) => {
      const items = [...r.items].sort((x, y) => y.version - x.version);
      setList(items);
      if (items.length) { setB(items[0].version); setA(items[Math.min(1, items.length - 1)].version); }
    }).catch((e: unknown) => setErr(describe(e)));
  }, [base]);
  useEffect(() => {
    for (const v of [a, b]) if (v && !specs[v]) {
      get(`${base}?version=${v}`).then((w: any) => setSpecs((s) => ({...s, [v]: w.spec}))).catch((e: unknown) => setErr(describe(e)));
    }
  }, [a, b]); // eslint-disable-line react-hooks/exhaustive-deps
  const sa = specs[a], sb = specs[b];
  const lines = sa && sb ? diffLines(toYAML(sa), toYAML(sb)) : [];
  const g = sa && sb ? graphDiff(sa.tasks || [], sb.tasks || []) : null;
  return (
    <div className="versions">
      {err ? <p className="apierror" role="alert">{err}</p> : null}
      <table className="grid vlist">
        <thead><tr><th>Version</th><th>Spec hash</th><th>Created</th><th>From</th><th>To</th></tr></thead>
        <tbody>{list.map((v) => (
          <tr key={v.version} data-version={v.version}>
            <td className="num">v{v.version}</td><td><code>{v.spec_hash.slice(0, 12)}</code></td><td><Time iso={v.created_at} /></td>
            <td><input type="radio" name="from" aria-label={`diff from v${v.version}`} checked={a === v.version} onChange={() => setA(v.version)} /></td>
            <td><input type="radio" name="to" aria-label={`diff to v${v.version}`} checked={b === v.version} onChange={() => setB(v.version)} /></td>
          </tr>))}</tbody>
      </table>
      {g ? <div className="graphdiff" id="graph-diff">
        <h2>Graph: v{a} → v{b}</h2>
        <ul>
          <li>tasks added: {g.added.join(', ') || 'none'}</li>
          <li>tasks removed: {g.removed.join(', ') || 'none'}</li>
          <li>tasks changed: {g.changed.join(', ') || 'none'}</li>
          <li>dependencies added: {g.edgesAdded.join('; ') || 'none'}</li>
          <li>dependencies removed: {g.edgesRemoved.join('; ') || 'none'}</li>
        </ul>
      </div> : null}
      {lines.length ? <pre className="diff" id="spec-diff" aria-label={`spec diff v${a} to v${b}`}>{lines.map((l, i) =>
        <div key={i} className={l.op === '+' ? 'add' : l.op === '-' ? 'del' : ''}>{l.op} {l.text}</div>)}</pre> : null}
    </div>
  );
}
