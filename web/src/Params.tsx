// Params is a list of NAME=value rows with add and remove; the workflow's
// declared params come as rows with their default as the placeholder, and
// such a row left empty is not sent (the default applies).
import {useState} from 'react';

type Row = {k: string; v: string; ph: string};

export function rowsOf(initial: Record<string, string> = {}, defaults: Record<string, string> = {}): Row[] {
  const rows = Object.entries(initial).map(([k, v]) => ({k, v, ph: ''}));
  for (const [k, ph] of Object.entries(defaults)) if (!(k in initial)) rows.push({k, v: '', ph});
  return rows;
}

// valuesOf is what the rows send: named rows, less the empty default ones.
export function valuesOf(rows: Row[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const r of rows) {
    const k = r.k.trim();
    if (k && (r.v !== '' || !r.ph)) out[k] = r.v;
  }
  return out;
}

export function useParams(initial?: Record<string, string>, defaults?: Record<string, string>) {
  return useState<Row[]>(() => rowsOf(initial, defaults));
}

export function Params({rows, onChange}: {rows: Row[]; onChange: (r: Row[]) => void}) {
  const put = (i: number, r: Partial<Row>) => onChange(rows.map((x, j) => (j === i ? {...x, ...r} : x)));
  return (
    <div className="kveditor">
      <div className="kvrows">
        {rows.map((r, i) => (
          <div className="kvrow" key={i}>
            <input className="k" aria-label="param name" placeholder="NAME" value={r.k} spellCheck={false} onChange={(e) => put(i, {k: e.target.value})} />
            <input className="v" aria-label={'param value' + (r.k ? ' of ' + r.k : '')} placeholder={r.ph || 'value'} value={r.v} spellCheck={false}
              onChange={(e) => put(i, {v: e.target.value})} />
            <button type="button" className="small" title="Remove" aria-label={`Remove param ${r.k || i + 1}`} onClick={() => onChange(rows.filter((_, j) => j !== i))}>−</button>
          </div>
        ))}
      </div>
      <button type="button" className="small" onClick={() => onChange([...rows, {k: '', v: '', ph: ''}])}>+ param</button>
    </div>
  );
}

export function ParamsText({params}: {params?: Record<string, string> | null}) {
  const keys = Object.keys(params || {}).sort();
  if (!keys.length) return <span className="muted">none</span>;
  return <span className="params">{keys.map((k) => <code key={k}>{k}={params![k]}</code>)}</span>;
}
