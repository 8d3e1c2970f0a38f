// The form of one task: its type's own fields, then the fields every task
// has. Each control has a label; a field with a problem says so under it.
import {useEffect, useId, useState, type ReactNode} from 'react';
import {describe, get} from './api';
import type {SpecTask} from './graph';
import {typeOf, type Problems} from './spec';
import {CodeArea, type CodeLang} from './CodeArea';
import {FORMS, TypeFields} from './TypeFields';

export const PRIORITIES = ['highest', 'high', 'medium', 'low', 'lowest'];
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
  const commonBad = Object.keys(problems).some((k) => ['retries', 'retry_interval', 'timeout'].includes(k));
  const [showCommon, setShowCommon] = useState(commonBad);
  const text = (k: string, label: string, ph = '', hint?: string) => (
    <Field p={problems} k={k} label={label} hint={hint}>{(id, bad) => <input id={id} value={String(task[k] ?? '')} placeholder={ph} spellCheck={false}
      aria-invalid={bad} onChange={(e) => set(k, e.target.value)} />}</Field>);
  const code = (k: string, label: string, rows = 6, lang: CodeLang = 'text') => (
    <Field p={problems} k={k} label={label}>{(id, bad) => <CodeArea id={id} rows={rows} lang={lang} value={String(task[k] ?? '')}
      invalid={bad} onChange={(v) => set(k, v)} />}</Field>);
  const names = (k: string, label: string) => (
    <Field p={problems} k={k} label={label} hint={`task names, comma-separated (${others.slice(0, 4).join(', ')}${others.length > 4 ? ', …' : ''})`}>{(id, bad) =>
      <ListInput id={id} value={list(task[k])} bad={bad} onChange={(v) => set(k, v)} />}</Field>);

  return (
    <form className="taskform form" aria-label={`Task ${task.name}`} onSubmit={(e) => e.preventDefault()}>
      <div className="titlebar"><h2>{ty} task</h2>
        <button type="button" className="small danger" id="delete-task" onClick={onDelete}>Delete task</button></div>
      <Field p={problems} k="name" label="Name">{(id, bad) => <input id={id} value={name} spellCheck={false} aria-invalid={bad}
        onChange={(e) => setName(e.target.value)} onBlur={() => name !== task.name && onChange({...task, name})}
        onKeyDown={(e) => { if (e.key === 'Enter') { e.preventDefault(); if (name !== task.name) onChange({...task, name}); } }} />}</Field>
      {text('description', 'Description')}

      {ty === 'shell' || ty === 'python' ? code('command', ty === 'python' ? 'Script' : 'Command', 8, ty === 'python' ? 'python' : 'bash') : null}
      {ty === 'http' ? <>
        <Field p={problems} k="method" label="Method">{(id) => <select id={id} value={String(task.method || 'GET')} onChange={(e) => set('method', e.target.value)}>
          {['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD'].map((m) => <option key={m}>{m}</option>)}</select>}</Field>
        {text('url', 'URL', 'https://example.com/api')}
        <KV label="Headers" value={task.headers as Record<string, string>} onChange={(v) => set('headers', v)} />
        {code('body', 'Body', 4, 'json')}
        <Field p={problems} k="expect_status" label="Expect status" hint="comma-separated; empty: any 2xx">{(id, bad) => <ListInput id={id} bad={bad}
          value={list(task.expect_status)} onChange={(v) => set('expect_status', v.length ? v.map(Number) : undefined)} />}</Field>
        <KV label="Outputs (name: JSON path)" value={task.outputs as Record<string, string>} onChange={(v) => set('outputs', v)} />
        <Check label="Skip TLS verification" value={!!task.insecure_skip_verify} onChange={(v) => set('insecure_skip_verify', v || undefined)} />
      </> : null}
      {ty === 'sql' ? <>
        <Field p={problems} k="datasource" label="Datasource">{(id, bad) =>
          <DatasourcePicker id={id} bad={bad} value={String(task.datasource ?? '')} onChange={(v) => set('datasource', v)} />}</Field>
        {code('sql', 'SQL', 6, 'sql')}
        <Check label="In one transaction" value={task.transaction !== false} onChange={(v) => set('transaction', v ? undefined : false)} />
      </> : null}
      {ty === 'sub_workflow' ? <>
        {text('workflow', 'Workflow', 'name, or project/name')}
        <Field p={problems} k="version" label="Version" hint="empty: the latest at the parent's start">{(id) => <input id={id} type="number" min={1}
          value={task.version === undefined ? '' : String(task.version)} onChange={(e) => set('version', e.target.value ? Number(e.target.value) : undefined)} />}</Field>
      </> : null}
      {ty === 'dependent' ? <>
        <Field p={problems} k="wait_for" label="Wait for">{() => <WaitFor value={(task.wait_for as Record<string, string>[]) || []} onChange={(v) => set('wait_for', v)} />}</Field>
        <Field p={problems} k="relation" label="Relation">{(id) => <select id={id} value={String(task.relation || 'all')} onChange={(e) => set('relation', e.target.value)}>
          <option value="all">all of them</option><option value="any">any of them</option></select>}</Field>
        <Field p={problems} k="on_failed" label="On failed">{(id) => <select id={id} value={String(task.on_failed || 'fail')} onChange={(e) => set('on_failed', e.target.value)}>
          <option value="fail">fail</option><option value="wait">wait</option></select>}</Field>
        {text('check_interval', 'Check interval', '1m')}
      </> : null}
      {FORMS.has(ty) ? null : <TypeFields type={ty} task={task} problems={problems} set={set} />}
      {ty === 'conditions' ? <>{names('on_success', 'On success')}{names('on_failure', 'On failure')}</> : null}
      {ty === 'switch' ? <>
        <Field p={problems} k="cases" label="Cases">{() => <Cases value={(task.cases as {when: string; next: string[]}[]) || []} onChange={(v) => set('cases', v)} />}</Field>
        {names('default', 'Default')}
      </> : null}

      {/* Open while one of its fields has a problem, and while the user keeps it open: a
          half-typed duration ("5" on the way to "5s") must not close it under the next key. */}
      <details className="common" open={showCommon || commonBad} onToggle={(e) => setShowCommon(e.currentTarget.open)}>
        <summary>Retries, timeout, priority, groups, params</summary>
        <Field p={problems} k="retries" label="Retries">{(id, bad) => <input id={id} type="number" min={0} aria-invalid={bad} value={task.retries === undefined ? '' : String(task.retries)}
          onChange={(e) => set('retries', e.target.value === '' ? undefined : Number(e.target.value))} />}</Field>
        {text('retry_interval', 'Retry interval', '30s')}
        {text('timeout', 'Timeout', '1h')}
        <Field p={problems} k="timeout_strategy" label="On timeout">{(id) => <select id={id} value={String(task.timeout_strategy || '')} onChange={(e) => set('timeout_strategy', e.target.value || undefined)}>
          <option value="">default (fail)</option><option value="fail">fail</option><option value="warn">warn</option></select>}</Field>
        <Field p={problems} k="priority" label="Priority">{(id) => <select id={id} value={String(task.priority || '')} onChange={(e) => set('priority', e.target.value || undefined)}>
          <option value="">workflow's</option>{PRIORITIES.map((p) => <option key={p}>{p}</option>)}</select>}</Field>
        {text('worker_group', 'Worker group', 'default')}
        {text('task_group', 'Task group', 'none')}
        <KV label="Params" value={task.params as Record<string, string>} onChange={(v) => set('params', v)}
          secret={list(task.secret_params)} onSecret={(v) => set('secret_params', v)} />
      </details>
      {Object.keys(problems).length ? <ul className="problems" aria-label="problems">{Object.entries(problems).map(([k, v]) => <li key={k}>{v}</li>)}</ul> : null}
    </form>
  );
}

// Field is a component of its own, never one made inside TaskForm's render:
// a component type made anew on each render is a new type to React, which
// then remounts its inputs on every key and the focus is lost.
export function Field({k, label, children, hint, p}: {k: string; label: string; children: (id: string, bad: boolean) => ReactNode; hint?: string; p: Problems}) {
  const id = useId();
  const problem = p[k];
  return (
    <div className={['field', problem && 'bad'].filter(Boolean).join(' ')} data-field={k}>
      <label htmlFor={id}>{label}</label>
      <div>{children(id, !!problem)}{hint ? <p className="hint">{hint}</p> : null}{problem ? <p className="fielderr" role="alert">{problem}</p> : null}</div>
    </div>
  );
}

export function Check({label, value, onChange}: {label: string; value: boolean; onChange: (v: boolean) => void}) {
  return <div className="field"><span /><label><input type="checkbox" checked={value} onChange={(e) => onChange(e.target.checked)} /> {label}</label></div>;
}

export function KV({label, value, onChange, secret, onSecret}: {label: string; value?: Record<string, string>; onChange: (v: Record<string, string>) => void;
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
      <button type="button" className="small" data-add={label} onClick={() => setRows([...rows, ['', '']])}>+ add</button>
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
      <button type="button" className="small" data-add="wait for" onClick={() => onChange([...value, {workflow: '', date: 'today'}])}>+ workflow</button>
    </div>
  );
}

function Cases({value, onChange}: {value: {when: string; next: string[]}[]; onChange: (v: {when: string; next: string[]}[]) => void}) {
  return (
    <div className="rows">
      {value.map((c, i) => (
        <div className="kvrow" key={i}>
          <input aria-label={`case ${i + 1} when`} placeholder='env == "prod"' value={c.when || ''} onChange={(e) => onChange(value.map((r, j) => (j === i ? {...r, when: e.target.value} : r)))} />
          <ListInput label={`case ${i + 1} next`} placeholder="next tasks" value={c.next || []} onChange={(v) => onChange(value.map((r, j) => (j === i ? {...r, next: v} : r)))} />
          <button type="button" className="small" aria-label={`Remove case ${i + 1}`} onClick={() => onChange(value.filter((_, j) => j !== i))}>−</button>
        </div>
      ))}
      <button type="button" className="small" data-add="case" onClick={() => onChange([...value, {when: '', next: []}])}>+ case</button>
    </div>
  );
}

// DatasourcePicker lists the datasources (GET /api/v1/datasources) to pick
// one from, so a typo is not found only at save. Listing them needs an
// admin; anyone else, or a failed list, types the name, told why.
function DatasourcePicker({id, value, bad, onChange}: {id: string; value: string; bad: boolean; onChange: (v: string) => void}) {
  const [names, setNames] = useState<string[] | null>(null);
  const [why, setWhy] = useState('');
  useEffect(() => {
    const ac = new AbortController();
    get('/api/v1/datasources', {signal: ac.signal}).then((r: {items: {name: string; type: string}[]}) => setNames(r.items.map((d) => d.name)))
      .catch((e: any) => { if (e.name !== 'AbortError') setWhy(e.status === 403 ? 'only an admin can list datasources: type its name' : `the datasources could not be listed (${describe(e)}): type its name`); });
    return () => ac.abort();
  }, []);
  if (why) {
    return <><input id={id} value={value} placeholder="name of a datasource" spellCheck={false} aria-invalid={bad} onChange={(e) => onChange(e.target.value)} />
      <p className="hint">{why}</p></>;
  }
  const list = names || [];
  return <>
    <select id={id} value={value} aria-invalid={bad} disabled={names === null} onChange={(e) => onChange(e.target.value)}>
      <option value="">{names === null ? 'loading the datasources…' : 'choose a datasource'}</option>
      {list.map((n) => <option key={n} value={n}>{n}</option>)}
      {value && !list.includes(value) ? <option value={value}>{value}{names === null ? '' : ' (not found)'}</option> : null}
    </select>
    {names === null || names.length ? null : <p className="hint">No datasource yet: an admin adds one with <code>beluga datasource set</code>.</p>}
  </>;
}

// ListInput is a comma-separated list typed as text: the text is its own,
// so a comma or a space just typed stays in the field (the list drops the
// empty item it makes). The form is remade when undo changes the list.
export function ListInput({id, label, placeholder, value, bad, onChange}: {id?: string; label?: string; placeholder?: string; value: string[]; bad?: boolean;
  onChange: (v: string[]) => void}) {
  const [text, setText] = useState(value.join(', '));
  return <input id={id} aria-label={label} placeholder={placeholder} value={text} spellCheck={false} aria-invalid={bad}
    onChange={(e) => { setText(e.target.value); onChange(csv(e.target.value)); }} />;
}
