// The form of one task: its type's own fields, then the fields every task
// has. Each control has a label; a field with a problem says so under it.
import {useId, useState, type ReactNode} from 'react';
import type {SpecTask} from './graph';
import {typeOf, type Problems} from './spec';
import {CodeArea, type CodeLang} from './CodeArea';

const PRIORITIES = ['highest', 'high', 'medium', 'low', 'lowest'];
const list = (v: unknown): string[] => (Array.isArray(v) ? (v as unknown[]).map(String) : []);
const csv = (s: string) => s.split(',').map((x) => x.trim()).filter(Boolean);

interface Props {
  task: SpecTask;
  problems?: Problems;
  others: string[];
  onChange: (t: SpecTask) => void;
  onDelete: () => void;
}

export function TaskForm({task, problems = {}, others, onChange, onDelete}: Props) {
  const set = (k: string, v: unknown) => onChange({...task, [k]: v});
  const [name, setName] = useState(task.name);
  const ty = typeOf(task);
  const F = (p: {k: string; label: string; children: (id: string, bad: boolean) => ReactNode; hint?: string}) => <Field {...p} problem={problems[p.k]} />;
  const text = (k: string, label: string, ph = '', hint?: string) => (
    <F k={k} label={label} hint={hint}>{(id, bad) => <input id={id} value={String(task[k] ?? '')} placeholder={ph} spellCheck={false}
      aria-invalid={bad} onChange={(e) => set(k, e.target.value)} />}</F>);
  const code = (k: string, label: string, rows = 6, lang: CodeLang = 'text') => (
    <F k={k} label={label}>{(id, bad) => <CodeArea id={id} rows={rows} lang={lang} value={String(task[k] ?? '')}
      invalid={bad} onChange={(v) => set(k, v)} />}</F>);
  const names = (k: string, label: string) => (
    <F k={k} label={label} hint={`task names, comma-separated (${others.slice(0, 4).join(', ')}${others.length > 4 ? ', …' : ''})`}>{(id, bad) =>
      <input id={id} value={list(task[k]).join(', ')} spellCheck={false} aria-invalid={bad} onChange={(e) => set(k, csv(e.target.value))} />}</F>);

  return (
    <form className="taskform form" aria-label={`Task ${task.name}`} onSubmit={(e) => e.preventDefault()}>
      <div className="titlebar"><h2>{ty} task</h2>
        <button type="button" className="small danger" id="delete-task" onClick={onDelete}>Delete task</button></div>
      <F k="name" label="Name">{(id, bad) => <input id={id} value={name} spellCheck={false} aria-invalid={bad}
        onChange={(e) => setName(e.target.value)} onBlur={() => name !== task.name && onChange({...task, name})}
        onKeyDown={(e) => { if (e.key === 'Enter') { e.preventDefault(); if (name !== task.name) onChange({...task, name}); } }} />}</F>
      {text('description', 'Description')}

      {ty === 'shell' || ty === 'python' ? code('command', ty === 'python' ? 'Script' : 'Command', 8, ty === 'python' ? 'python' : 'bash') : null}
      {ty === 'http' ? <>
        <F k="method" label="Method">{(id) => <select id={id} value={String(task.method || 'GET')} onChange={(e) => set('method', e.target.value)}>
          {['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'].map((m) => <option key={m}>{m}</option>)}</select>}</F>
        {text('url', 'URL', 'https://example.com/api')}
        <KV label="Headers" value={task.headers as Record<string, string>} onChange={(v) => set('headers', v)} />
        {code('body', 'Body', 4, 'json')}
        <F k="expect_status" label="Expect status" hint="comma-separated; empty: any 2xx">{(id, bad) => <input id={id} aria-invalid={bad}
          value={list(task.expect_status).join(', ')} onChange={(e) => set('expect_status', csv(e.target.value).map(Number))} />}</F>
        <KV label="Outputs (name: JSON path)" value={task.outputs as Record<string, string>} onChange={(v) => set('outputs', v)} />
        <Check label="Skip TLS verification" value={!!task.insecure_skip_verify} onChange={(v) => set('insecure_skip_verify', v || undefined)} />
      </> : null}
      {ty === 'sql' ? <>
        {text('datasource', 'Datasource', 'name of a datasource')}
        {code('sql', 'SQL', 6, 'sql')}
        <Check label="In one transaction" value={task.transaction !== false} onChange={(v) => set('transaction', v ? undefined : false)} />
      </> : null}
      {ty === 'sub_workflow' ? <>
        {text('workflow', 'Workflow', 'name, or project/name')}
        <F k="version" label="Version" hint="empty: the latest at the parent's start">{(id) => <input id={id} type="number" min={1}
          value={task.version === undefined ? '' : String(task.version)} onChange={(e) => set('version', e.target.value ? Number(e.target.value) : undefined)} />}</F>
      </> : null}
      {ty === 'dependent' ? <>
        <F k="wait_for" label="Wait for">{() => <WaitFor value={(task.wait_for as Record<string, string>[]) || []} onChange={(v) => set('wait_for', v)} />}</F>
        <F k="relation" label="Relation">{(id) => <select id={id} value={String(task.relation || 'all')} onChange={(e) => set('relation', e.target.value)}>
          <option value="all">all of them</option><option value="any">any of them</option></select>}</F>
        <F k="on_failed" label="On failed">{(id) => <select id={id} value={String(task.on_failed || 'fail')} onChange={(e) => set('on_failed', e.target.value)}>
          <option value="fail">fail</option><option value="wait">wait</option></select>}</F>
        {text('check_interval', 'Check interval', '1m')}
      </> : null}
      {ty === 'conditions' ? <>{names('on_success', 'On success')}{names('on_failure', 'On failure')}</> : null}
      {ty === 'switch' ? <>
        <F k="cases" label="Cases">{() => <Cases value={(task.cases as {when: string; next: string[]}[]) || []} onChange={(v) => set('cases', v)} />}</F>
        {names('default', 'Default')}
      </> : null}

      <details className="common" open={Object.keys(problems).some((k) => ['retries', 'retry_interval', 'timeout'].includes(k))}>
        <summary>Retries, timeout, priority, groups, params</summary>
        <F k="retries" label="Retries">{(id, bad) => <input id={id} type="number" min={0} aria-invalid={bad} value={task.retries === undefined ? '' : String(task.retries)}
          onChange={(e) => set('retries', e.target.value === '' ? undefined : Number(e.target.value))} />}</F>
        {text('retry_interval', 'Retry interval', '30s')}
        {text('timeout', 'Timeout', '1h')}
        <F k="timeout_strategy" label="On timeout">{(id) => <select id={id} value={String(task.timeout_strategy || '')} onChange={(e) => set('timeout_strategy', e.target.value || undefined)}>
          <option value="">default (fail)</option><option value="fail">fail</option><option value="warn">warn</option></select>}</F>
        <F k="priority" label="Priority">{(id) => <select id={id} value={String(task.priority || '')} onChange={(e) => set('priority', e.target.value || undefined)}>
          <option value="">workflow's</option>{PRIORITIES.map((p) => <option key={p}>{p}</option>)}</select>}</F>
        {text('worker_group', 'Worker group', 'default')}
        {text('task_group', 'Task group', 'none')}
        <KV label="Params" value={task.params as Record<string, string>} onChange={(v) => set('params', v)}
          secret={list(task.secret_params)} onSecret={(v) => set('secret_params', v)} />
      </details>
      {Object.keys(problems).length ? <ul className="problems" aria-label="problems">{Object.entries(problems).map(([k, v]) => <li key={k}>{v}</li>)}</ul> : null}
    </form>
  );
}

function Field({k, label, children, hint, problem}: {k: string; label: string; children: (id: string, bad: boolean) => ReactNode; hint?: string; problem?: string}) {
  const id = useId();
  return (
    <div className={['field', problem && 'bad'].filter(Boolean).join(' ')} data-field={k}>
      <label htmlFor={id}>{label}</label>
      <div>{children(id, !!problem)}{hint ? <p className="hint">{hint}</p> : null}{problem ? <p className="fielderr" role="alert">{problem}</p> : null}</div>
    </div>
  );
}

function Check({label, value, onChange}: {label: string; value: boolean; onChange: (v: boolean) => void}) {
  return <div className="field"><span /><label><input type="checkbox" checked={value} onChange={(e) => onChange(e.target.checked)} /> {label}</label></div>;
}

function KV({label, value, onChange, secret, onSecret}: {label: string; value?: Record<string, string>; onChange: (v: Record<string, string>) => void;
  secret?: string[]; onSecret?: (v: string[]) => void}) {
  const [rows, setRows] = useState<[string, string][]>(Object.entries(value || {}));
  const push = (r: [string, string][]) => {
    setRows(r);
    const o: Record<string, string> = {};
    for (const [k, v] of r) if (k.trim()) o[k.trim()] = v;
    onChange(o);
  };
  return (
    <fieldset className="field kvfield"><legend>{label}</legend>
      {rows.map(([k, v], i) => (
        <div className="kvrow" key={i}>
          <input aria-label={`${label} name ${i + 1}`} placeholder="NAME" value={k} onChange={(e) => push(rows.map((r, j) => (j === i ? [e.target.value, r[1]] : r)))} />
          <input aria-label={`${label} value ${i + 1}`} placeholder="value" value={v} onChange={(e) => push(rows.map((r, j) => (j === i ? [r[0], e.target.value] : r)))} />
          {onSecret ? <label className="secret"><input type="checkbox" checked={!!secret?.includes(k)}
            onChange={(e) => onSecret(e.target.checked ? [...(secret || []), k] : (secret || []).filter((x) => x !== k))} /> secret</label> : null}
          <button type="button" className="small" aria-label={`Remove ${label} ${i + 1}`} onClick={() => push(rows.filter((_, j) => j !== i))}>−</button>
        </div>
      ))}
      <button type="button" className="small" onClick={() => setRows([...rows, ['', '']])}>+ add</button>
    </fieldset>
  );
}

function WaitFor({value, onChange}: {value: Record<string, string>[]; onChange: (v: Record<string, string>[]) => void}) {
  const upd = (i: number, k: string, v: string) => onChange(value.map((r, j) => (j === i ? {...r, [k]: v || undefined} as Record<string, string> : r)));
  return (
    <div className="rows">
      {value.map((r, i) => (
        <div className="kvrow" key={i}>
          {(['project', 'workflow', 'task', 'date'] as const).map((k) => (
            <input key={k} aria-label={`wait for ${i + 1} ${k}`} placeholder={k === 'date' ? 'today' : k} value={r[k] || ''} onChange={(e) => upd(i, k, e.target.value)} />
          ))}
          <button type="button" className="small" aria-label={`Remove wait for ${i + 1}`} onClick={() => onChange(value.filter((_, j) => j !== i))}>−</button>
        </div>
      ))}
      <button type="button" className="small" onClick={() => onChange([...value, {workflow: '', date: 'today'}])}>+ workflow</button>
    </div>
  );
}

function Cases({value, onChange}: {value: {when: string; next: string[]}[]; onChange: (v: {when: string; next: string[]}[]) => void}) {
  return (
    <div className="rows">
      {value.map((c, i) => (
        <div className="kvrow" key={i}>
          <input aria-label={`case ${i + 1} when`} placeholder='env == "prod"' value={c.when || ''} onChange={(e) => onChange(value.map((r, j) => (j === i ? {...r, when: e.target.value} : r)))} />
          <input aria-label={`case ${i + 1} next`} placeholder="next tasks" value={(c.next || []).join(', ')} onChange={(e) => onChange(value.map((r, j) => (j === i ? {...r, next: csv(e.target.value)} : r)))} />
          <button type="button" className="small" aria-label={`Remove case ${i + 1}`} onClick={() => onChange(value.filter((_, j) => j !== i))}>−</button>
        </div>
      ))}
      <button type="button" className="small" onClick={() => onChange([...value, {when: '', next: []}])}>+ case</button>
    </div>
  );
}
