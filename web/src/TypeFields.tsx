// The form of a task type the UI has no form of its own for: one control
// per field the registry lists (tasktypes.gen.ts), by its JSON type, so a
// newly registered type can be edited before anyone writes its form.
import {useId} from 'react';
import type {SpecTask} from './graph';
import {TYPE_FIELDS, type TaskTypeField} from './tasktypes.gen';
import type {Problems} from './spec';

// FORMS are the types TaskForm has a form of its own for.
export const FORMS = new Set(['shell', 'python', 'http', 'sql', 'sub_workflow', 'dependent', 'conditions', 'switch']);

export function TypeFields({type, task, problems, set}: {type: string; task: SpecTask; problems: Problems; set: (k: string, v: unknown) => void}) {
  const fields = (TYPE_FIELDS as Record<string, TaskTypeField[]>)[type] || [];
  return <>{fields.map((f) => <TypeField key={f.name} f={f} value={task[f.name]} problem={problems[f.name]} set={(v) => set(f.name, v)} />)}</>;
}

function TypeField({f, value, problem, set}: {f: TaskTypeField; value: unknown; problem?: string; set: (v: unknown) => void}) {
  const id = useId();
  let control;
  switch (f.type) {
    case 'boolean':
      control = <input id={id} type="checkbox" checked={!!value} onChange={(e) => set(e.target.checked || undefined)} />;
      break;
    case 'integer': case 'number':
      control = <input id={id} type="number" value={value === undefined ? '' : String(value)} aria-invalid={!!problem}
        onChange={(e) => set(e.target.value === '' ? undefined : Number(e.target.value))} />;
      break;
    case 'string':
      control = <input id={id} value={String(value ?? '')} spellCheck={false} aria-invalid={!!problem} onChange={(e) => set(e.target.value)} />;
      break;
    default: // arrays, objects, several shapes: JSON
      control = <textarea id={id} rows={3} spellCheck={false} aria-invalid={!!problem} defaultValue={value === undefined ? '' : JSON.stringify(value)}
        onBlur={(e) => { try { set(e.target.value.trim() ? JSON.parse(e.target.value) : undefined); } catch { /* kept as typed until it parses */ } }} />;
  }
  return (
    <div className={['field', problem && 'bad'].filter(Boolean).join(' ')} data-field={f.name}>
      <label htmlFor={id}>{f.name}</label>
      <div>{control}{f.type === 'array' || f.type === 'object' || !f.type ? <p className="hint">JSON</p> : null}
        {problem ? <p className="fielderr" role="alert">{problem}</p> : null}</div>
    </div>
  );
}
