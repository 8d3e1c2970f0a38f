// One backfill with each of its schedule times and the run for it, and
// the form of a workflow page that starts a backfill (the list of every
// backfill is BackfillsPage.tsx).
import {useEffect, useRef, useState, type FormEvent} from 'react';
import {api, describe, get, user} from './api';
import {confirmDialog, flash, go} from './notify';
import type {Page} from './router';
import {Progress, type Backfill} from './BackfillsPage';
import {Params, ParamsText, useParams, valuesOf} from './Params';
import type {Schedule} from './SchedulePanel';
import {PlanPanel, type PlanTarget} from './PlanPanel';
import {PRIORITIES} from './states';
import {Badge, Duration, Time, Why, enc} from './ui';
import {rfc3339Local, userZone} from './zone';
import {RefusedList, calendarLine, type Refused} from './Refused';

type Full = Backfill & {reason?: string; cron: string; timezone: string; start: string; end: string; times: string[]; on_failure: string;
  calendar?: string; on_holiday?: string; refused?: Refused[];
  priority?: string; worker_group?: string; params?: Record<string, string>; end_at?: string | null};
type Run = {id: number; state: string; schedule_time?: string; start_time?: string; end_time?: string};

// live says whether a backfill may still change: it submits more times,
// or runs it submitted have not finished (a stopped backfill's runs go on).
function live(b: Full) {
  return b.state === 'running' || b.progress.unfinished > 0;
}

export function BackfillPage({id, page}: {id: number; page: Page}) {
  const [cur, setCur] = useState<{b: Full; runs: Run[]} | null>(null);
  const [missing, setMissing] = useState('');
  const last = useRef<Full | null>(null);
  const keepUntil = useRef(0); // poll a finished backfill until then (a stop was just sent)
  const refresh = useRef<() => void>(() => {});

  useEffect(() => {
    refresh.current = page.poll(async () => {
      const c = last.current;
      if (c && !live(c) && Date.now() > keepUntil.current) return;
      // The runs are read after the backfill, so they are at least as new
      // as its progress: the last read of a finished backfill shows them done.
      let b: Full;
      try {
        b = await get(`/api/v1/backfills/${id}`, {signal: page.signal});
      } catch (e) {
        if ((e as {status?: number}).status === 404) setMissing(describe(e));
        throw e;
      }
      const runs = await get(`/api/v1/instances?backfill=${id}&limit=1000`, {signal: page.signal});
      if (!page.alive) return;
      last.current = b;
      setCur({b, runs: runs.items});
    });
  }, [id, page]);

  async function stop() {
    if (!await confirmDialog(`Stop backfill #${id}?`, 'No more of its schedule times are submitted; the runs already submitted go on.', 'Stop')) return;
    try {
      const b = await api('POST', `/api/v1/backfills/${id}/actions`, {json: {action: 'stop', by: user()}});
      flash(`Backfill #${id} stopped: ${b.submitted} of ${b.total} times submitted.`, 'ok');
      keepUntil.current = Date.now() + 10000;
      refresh.current();
    } catch (e) { flash(`Stop backfill #${id}: ${describe(e)}`); }
  }

  if (missing) return <div><h1>Backfill #{id} not found</h1><p className="muted">{missing}</p><p><a href="#/backfills">Go to backfills</a>.</p></div>;
  const b = cur?.b;
  const why = !b ? 'loading the backfill…' : b.state === 'running' ? '' : `Stop is not possible while the backfill is ${b.state}; only a running backfill can be stopped.`;
  return (
    <div className="backfill">
      <div className="titlebar"><h1>Backfill #{id} {b ? <Badge state={b.state} /> : null}</h1>
        <div className="actions"><Why why={why}>{(p) => <button type="button" className="danger" id="backfill-stop" {...p} onClick={stop}>Stop</button>}</Why></div></div>
      <div className="head">{b ? <Head b={b} /> : <p className="muted">Loading…</p>}</div>
      <h2>Schedule times</h2>
      <p className="hint">In the order they are submitted, each with its run.</p>
      <table className="grid times">
        <thead><tr><th>#</th><th>Schedule time</th><th>Run</th><th>State</th><th>Started</th><th>Duration</th></tr></thead>
        <tbody>{b && cur ? <Times b={b} runs={cur.runs} /> : <tr className="empty"><td colSpan={6}>Loading…</td></tr>}</tbody>
      </table>
    </div>
  );
}

function Head({b}: {b: Full}) {
  const many = b.times.length > 1;
  const desc = many && new Date(b.times[0]) > new Date(b.times[b.times.length - 1]);
  const rows: [string, React.ReactNode][] = [
    ['Workflow', <a href={`#/workflows/${enc(b.project)}/${enc(b.workflow)}`}>{b.project}/{b.workflow}</a>],
    ['State', <Badge state={b.state} />],
    ['Progress', <Progress b={b} />],
  ];
  if (b.reason) rows.push(['Reason', b.reason]);
  rows.push(['Cron', <><code className="cron">{b.cron}</code> ({b.timezone || 'UTC'})</>],
    ['Range', <><Time iso={b.start} zone={b.timezone} /> → <Time iso={b.end} zone={b.timezone} /><span className="muted"> both included</span></>]);
  if (b.calendar) rows.push(['Calendar', <span id="backfill-calendar">{calendarLine(b.calendar, b.on_holiday, b.refused || [])}
    <RefusedList refused={b.refused || []} zone={b.timezone} /></span>]);
  if (many) rows.push(['Order', desc ? 'newest first' : 'oldest first']);
  rows.push(['Parallelism', `${b.parallelism} unfinished at a time`],
    ['On failure', b.on_failure === 'stop' ? 'stop: submit no more once a run failed' : 'continue past failed runs'],
    ['Priority', b.priority || <span className="muted">workflow's</span>],
    ['Worker group', b.worker_group || <span className="muted">workflow's</span>],
    ['Params', <ParamsText params={b.params} />],
    ['Dry run', b.dry_run ? 'yes: tasks are recorded as succeeded without running' : 'no'],
    ['Requested by', b.requested_by],
    ['Created', <Time iso={b.created_at} />],
    ['Ended', <Time iso={b.end_at} />]);
  return <dl className="kv">{rows.map(([k, v]) => [<dt key={k + ':t'}>{k}</dt>, <dd key={k}>{v}</dd>])}</dl>;
}

function Times({b, runs}: {b: Full; runs: Run[]}) {
  // A time's run is the one with its schedule time (each time runs once).
  const byTime = new Map<number, Run>();
  for (const r of runs) {
    if (!r.schedule_time) continue;
    const k = new Date(r.schedule_time).getTime();
    const o = byTime.get(k);
    if (!o || r.id < o.id) byTime.set(k, r);
  }
  if (!b.times.length) return <tr className="empty"><td colSpan={6}>No schedule times.</td></tr>;
  return <>{b.times.map((t, i) => {
    const r = byTime.get(new Date(t).getTime());
    const none = i < b.submitted ? 'submitted; its run is not found' : 'not submitted';
    return <tr key={t} className={r ? '' : 'pending'} data-time={t} data-instance={r ? r.id : ''} data-state={r ? r.state : ''}>
      <td className="num">{i + 1}</td><td><Time iso={t} zone={b.timezone} /></td>
      <td>{r ? <a href={`#/instances/${r.id}`}>#{r.id}</a> : <span className="muted">{none}</span>}</td>
      <td>{r ? <Badge state={r.state} /> : null}</td><td>{r ? <Time iso={r.start_time} /> : null}</td>
      <td className="num">{r ? <Duration start={r.start_time} end={r.end_time} /> : null}</td></tr>;
  })}</>;
}

// BackfillForm starts a backfill of a workflow; sc is its schedule (null:
// none; undefined: not read yet), whose cron and zone one without a cron takes.
export function BackfillForm({project, name, priority, group, defaults, sc}: {project: string; name: string; priority?: string; group?: string;
  defaults?: Record<string, string>; sc: Schedule | null | undefined}) {
  const zone = userZone();
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [cron, setCron] = useState('');
  const [tz, setTz] = useState('');
  const [par, setPar] = useState('1');
  const [order, setOrder] = useState('asc');
  const [onFailure, setOnFailure] = useState('continue');
  const [prio, setPrio] = useState('');
  const [wg, setWg] = useState('');
  const [params, setParams] = useParams({}, defaults);
  const [dry, setDry] = useState(false);
  const [err, setErr] = useState('');
  const [busy, setBusy] = useState(false);
  const [plan, setPlan] = useState<PlanTarget | null>(null);
  const [timesPreview, setTimesPreview] = useState<Preview | null>(null);
  useEffect(() => setTimesPreview(null), [from, to, cron, tz, order]); // a preview of other inputs would mislead

  const a = rfc3339Local(from), z = rfc3339Local(to);
  const sent = a || z ? `Sent as ${a || '(not set)'} to ${z || '(not set)'}` : '';

  // body is the backfill the form asks for (null: a bad range, said).
  function body(): Record<string, unknown> | null {
    setErr('');
    if (a === null || z === null) { setErr('From or To is not a valid date and time.'); return null; }
    const body: Record<string, unknown> = {start: a, end: z, order, on_failure: onFailure, by: user()};
    if (cron.trim()) body.cron = cron.trim();
    if (tz.trim()) body.timezone = tz.trim();
    if (par !== '') body.parallelism = Number(par);
    if (prio) body.priority = prio;
    if (wg.trim()) body.worker_group = wg.trim();
    const p = valuesOf(params);
    if (Object.keys(p).length) body.params = p;
    if (dry) body.dry_run = true;
    return body;
  }
  // preview shows what the backfill would run (PlanPanel): each time's run,
  // the runs downstream, waits, estimates, conflicts; its Apply starts it.
  function preview() {
    const b = body();
    if (!b) return;
    delete b.by;
    setPlan({path: `/api/v1/projects/${enc(project)}/workflows/${enc(name)}/backfill/plan`, body: b});
  }
  async function submit(e: FormEvent) {
    e.preventDefault();
    const b = body();
    if (!b) return;
    setBusy(true);
    try {
      const bf = await api('POST', `/api/v1/projects/${enc(project)}/workflows/${enc(name)}/backfill`, {json: b});
      go(`#/backfills/${bf.id}`, `Backfill #${bf.id} started: ${bf.total} schedule time${bf.total === 1 ? '' : 's'} of ${bf.cron} (${bf.timezone || 'UTC'}).`);
    } catch (ex) { setErr(describe(ex)); } finally { setBusy(false); }
  }

  // showPreview lists the times the backfill would run and the ones the
  // schedule's calendar refused (moved or dropped).
  async function showPreview() {
    setTimesPreview(null);
    const b = body();
    if (!b) return;
    setBusy(true);
    try {
      setTimesPreview(await api('POST', `/api/v1/projects/${enc(project)}/workflows/${enc(name)}/backfill/preview`, {json: b}));
    } catch (ex) { setErr(describe(ex)); } finally { setBusy(false); }
  }

  // The placeholders say whether the schedule's cron applies once it is known.
  const cronPh = sc === undefined ? 'e.g. 0 2 * * *' : sc ? `the schedule's: ${sc.cron}` : 'required (no schedule), e.g. 0 2 * * *';
  const tzPh = sc ? `the schedule's: ${sc.timezone || 'UTC'}` : 'UTC';
  return (
    <form className="panel form" id="backfill-form" onSubmit={submit} aria-labelledby="backfill-h">
      <div className="titlebar"><h2 id="backfill-h">Backfill</h2>
        <span className="actions"><a href={`#/backfills?project=${enc(project)}&workflow=${enc(name)}`}>its backfills</a></span></div>
      <p className="hint">Runs the workflow once per schedule time of a past range, both ends included; times after now are left to the schedule.</p>
      <label className="field"><span>From</span><input type="datetime-local" step={1} name="start" id="backfill-from" required value={from} onChange={(e) => setFrom(e.target.value)} /></label>
      <label className="field"><span>To</span><input type="datetime-local" step={1} name="end" id="backfill-to" required value={to} onChange={(e) => setTo(e.target.value)} /></label>
      <p className="hint">From and To are in your zone ({zone}, set at the top of the page) and are sent as RFC 3339 times; the cron's timezone says which times fire.</p>
      <p className="hint" id="backfill-sent">{sent}</p>
      <label className="field"><span>Cron</span><input name="cron" id="backfill-cron" spellCheck={false} placeholder={cronPh} value={cron} onChange={(e) => setCron(e.target.value)} /></label>
      <label className="field"><span>Timezone</span><input name="timezone" id="backfill-tz" spellCheck={false} placeholder={tzPh} value={tz} onChange={(e) => setTz(e.target.value)} /></label>
      <p className="hint">With no cron the schedule's cron and timezone are used; a cron given without a timezone is UTC.</p>
      <label className="field"><span>Parallelism</span><input type="number" name="parallelism" id="backfill-parallelism" min={1} max={100} value={par}
        title="how many of its runs may be unfinished at a time, 1 to 100" onChange={(e) => setPar(e.target.value)} /></label>
      <label className="field"><span>Order</span><select name="order" id="backfill-order" value={order} onChange={(e) => setOrder(e.target.value)}>
        <option value="asc">oldest first</option><option value="desc">newest first</option></select></label>
      <label className="field"><span>On failure</span><select name="on_failure" id="backfill-on-failure" value={onFailure} onChange={(e) => setOnFailure(e.target.value)}>
        <option value="continue">continue past failed runs</option><option value="stop">stop: submit no more once a run failed</option></select></label>
      <label className="field"><span>Priority</span><select name="priority" id="backfill-priority" value={prio} onChange={(e) => setPrio(e.target.value)}>
        <option value="">workflow's ({priority || 'medium'})</option>{PRIORITIES.map((p) => <option key={p} value={p}>{p}</option>)}</select></label>
      <label className="field"><span>Worker group</span><input name="worker_group" id="backfill-group" placeholder={group || 'default'} spellCheck={false} value={wg}
        onChange={(e) => setWg(e.target.value)} /></label>
      <div className="field"><span>Params</span><Params rows={params} onChange={setParams} /></div>
      <label className="field"><span>Dry run</span><span><input type="checkbox" name="dry_run" id="backfill-dry" checked={dry} onChange={(e) => setDry(e.target.checked)} /> record every task as succeeded without running it</span></label>
      <pre className="apierror" role="alert" id="backfill-error" hidden={!err}>{err}</pre>
      {timesPreview ? <PreviewList p={timesPreview} /> : null}
      <div className="buttons"><button type="submit" className="primary" id="backfill-submit" disabled={busy}>Start backfill</button>
        <button type="button" id="backfill-preview" disabled={busy} onClick={showPreview}>Preview times</button>
        <button type="button" id="backfill-plan" disabled={busy} title="what it would run first: each time's run, the runs downstream, waits, estimates, conflicts"
          onClick={preview}>Preview plan</button></div>
      {plan ? <PlanPanel action="backfill" label={`Backfill of ${name}`} target={plan} onClose={() => setPlan(null)}
        onApplied={(r) => { setPlan(null); if (r.backfill_id) go(`#/backfills/${r.backfill_id}`, `Backfill #${r.backfill_id} started from plan ${r.id}.`); }} /> : null}
    </form>
  );
}

type Preview = {cron: string; timezone: string; calendar?: string; on_holiday?: string; total: number; times: string[]; refused: Refused[]};

function PreviewList({p}: {p: Preview}) {
  return (
    <div className="bfpreview" id="backfill-preview-list" role="status">
      <p><strong>{p.total} schedule time{p.total === 1 ? '' : 's'}</strong> of <code className="cron">{p.cron}</code> ({p.timezone || 'UTC'});{' '}
        <span id="backfill-preview-calendar">{calendarLine(p.calendar, p.on_holiday, p.refused)}</span>.</p>
      <ol>{p.times.map((t) => <li key={t} data-time={t}><Time iso={t} zone={p.timezone} /></li>)}</ol>
      <RefusedList refused={p.refused} zone={p.timezone} />
    </div>
  );
}
