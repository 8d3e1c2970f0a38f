// The workflow's own settings, every one a spec has besides its tasks:
// params (secret ones marked), failure strategy, how many runs may be
// active, timeout, priority, worker group, tenant, alerts and deadline.
// The schedule (with its overlap rule) is set on the workflow page.
import {useEffect, useState} from 'react';
import {describe, get} from './api';
import {ALERT_TRIGGERS, FAILURE_STRATEGIES, type Alerts, type Problems} from './spec';
import {Field, KV, PRIORITIES} from './TaskForm';

type Spec = {tasks: unknown[]; [k: string]: unknown};

const FAILURE_HELP: Record<string, string> = {
  end: 'end: after a failed task nothing more is submitted',
  continue: 'continue: independent branches go on',
};

export function WorkflowForm({spec, problems, onChange}: {spec: Spec; problems: Problems; onChange: (s: Spec) => void}) {
  const set = (k: string, v: unknown) => onChange({...spec, [k]: v === '' ? undefined : v});
  const text = (k: string, label: string, ph = '', hint?: string) => (
    <Field p={problems} k={k} label={label} hint={hint}>{(id, bad) => <input id={id} value={String(spec[k] ?? '')} placeholder={ph} spellCheck={false}
      aria-invalid={bad} onChange={(e) => set(k, e.target.value)} />}</Field>);
  const alerts = (spec.alerts || {}) as Alerts;
  const setAlerts = (a: Alerts) => set('alerts', a.on?.length || a.channels?.length ? a : undefined);
  const secret = (spec.secret_params || []) as string[];
  return (
    <form className="taskform wfform form" aria-label="Workflow settings" onSubmit={(e) => e.preventDefault()}>
      <h2>Workflow settings</h2>
      <KV label="Params" value={spec.params as Record<string, string>} onChange={(v) => set('params', Object.keys(v).length ? v : undefined)}
        secret={secret} onSecret={(v) => set('secret_params', v.length ? v : undefined)} />
      {problems.params || problems.secret_params ? <p className="fielderr" role="alert">{problems.params || problems.secret_params}</p> : null}
      <p className="hint">Params are the run's environment variables (${'{'}NAME{'}'} in a task); a run, schedule or backfill may give other values. A secret one is stored sealed and shown as ***.</p>
      <Field p={problems} k="failure_strategy" label="On a failed task">{(id) => <select id={id} value={String(spec.failure_strategy || 'end')}
        onChange={(e) => set('failure_strategy', e.target.value === 'end' ? undefined : e.target.value)}>
        {FAILURE_STRATEGIES.map((f) => <option key={f} value={f}>{FAILURE_HELP[f]}</option>)}</select>}</Field>
      <Field p={problems} k="max_active_runs" label="Max active runs" hint="runs of this workflow that may be running at once; more wait in order. Empty: no limit. (A schedule's overlap rule is set with the schedule.)">
        {(id, bad) => <input id={id} type="number" min={1} aria-invalid={bad} value={spec.max_active_runs === undefined ? '' : String(spec.max_active_runs)}
          onChange={(e) => set('max_active_runs', e.target.value === '' ? undefined : Number(e.target.value))} />}</Field>
      {text('timeout', 'Run timeout', '2h', 'how long a run may take, e.g. 30m or 2h; empty: no limit')}
      <Field p={problems} k="timeout_strategy" label="On run timeout">{(id) => <select id={id} value={String(spec.timeout_strategy || '')}
        onChange={(e) => set('timeout_strategy', e.target.value)}>
        <option value="">default (warn)</option><option value="warn">warn: alert, let it run</option><option value="stop">stop the run</option></select>}</Field>
      <Field p={problems} k="priority" label="Priority">{(id) => <select id={id} value={String(spec.priority || '')} onChange={(e) => set('priority', e.target.value)}>
        <option value="">default (medium)</option>{PRIORITIES.map((p) => <option key={p}>{p}</option>)}</select>}</Field>
      {text('worker_group', 'Worker group', 'default', 'the workers its tasks run on, unless a task names its own')}
      {text('tenant', 'Tenant', 'the worker\'s user', 'the OS user shell and python tasks run as')}
      <fieldset className="field alertsfield" data-field="alerts"><legend>Alerts</legend>
        <div className="checks" role="group" aria-label="alert on">
          {ALERT_TRIGGERS.map((on) => <label key={on}><input type="checkbox" name="alert_on" value={on} checked={!!alerts.on?.includes(on)}
            onChange={(e) => setAlerts({...alerts, on: e.target.checked ? [...(alerts.on || []), on] : (alerts.on || []).filter((x) => x !== on)})} /> on {on}</label>)}
        </div>
        <Channels value={alerts.channels || []} onChange={(c) => setAlerts({...alerts, channels: c})} />
        {problems.alerts ? <p className="fielderr" role="alert">{problems.alerts}</p> : null}
      </fieldset>
      {text('deadline', 'Deadline', '06:00 or 2h', 'a run not succeeded by then alerts: a wall time in the run\'s zone (06:00) or a duration after the schedule time (2h)')}
    </form>
  );
}

// Channels picks the alert channels (GET /api/v1/alert-channels); when
// they cannot be listed the names are typed, told why.
function Channels({value, onChange}: {value: string[]; onChange: (v: string[]) => void}) {
  const [names, setNames] = useState<string[] | null>(null);
  const [why, setWhy] = useState('');
  const [typed, setTyped] = useState(value.join(', '));
  useEffect(() => {
    const ac = new AbortController();
    get('/api/v1/alert-channels', {signal: ac.signal}).then((r: {items: {name: string}[]}) => setNames(r.items.map((c) => c.name)))
      .catch((e: any) => { if (e.name !== 'AbortError') setWhy(`the alert channels could not be listed (${describe(e)}): type their names`); });
    return () => ac.abort();
  }, []);
  if (why) {
    return <label className="chtyped">Channels <input aria-label="alert channels" value={typed} spellCheck={false}
      onChange={(e) => { setTyped(e.target.value); onChange(e.target.value.split(',').map((x) => x.trim()).filter(Boolean)); }} /><span className="hint">{why}</span></label>;
  }
  if (names === null) return <p className="muted">Loading the alert channels…</p>;
  const all = [...new Set([...names, ...value])];
  if (!all.length) return <p className="hint">No alert channel yet: add one on the <a href="#/alert-channels">alert channels</a> page.</p>;
  return (
    <div className="checks" role="group" aria-label="send to">
      {all.map((c) => <label key={c}><input type="checkbox" name="alert_channel" value={c} checked={value.includes(c)}
        onChange={(e) => onChange(e.target.checked ? [...value, c] : value.filter((x) => x !== c))} /> {c}{names.includes(c) ? '' : ' (not found)'}</label>)}
    </div>
  );
}
