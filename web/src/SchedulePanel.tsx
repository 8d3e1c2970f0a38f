// The schedule panel of a workflow page: the schedule shown (next fires in
// the user's zone with the schedule's beside), and a form to set it, with
// the API's preview of the next fires, a calendar of them, and the
// schedule's own alerts and deadline, which override the workflow's for
// its runs. The list of every schedule is SchedulesPage.tsx.
import {RefusedList, calendarLine, type Refused} from './Refused';
import {useEffect, useRef, useState, type FormEvent} from 'react';
import {api, describe, get, user} from './api';
import {confirmDialog, flash} from './notify';
import {STOP_POLL, type Page} from './router';
import {Params, ParamsText, useParams, valuesOf} from './Params';
import {PRIORITIES} from './states';
import {ALERT_TRIGGERS, type Alerts} from './spec';
import {Err, Time, enc, useList} from './ui';
import {Fires} from './Fires';
import {dayIn, formatIn, inputValue, rfc3339Local, userZone, validZone} from './zone';

export type Schedule = {id: number; project: string; workflow: string; cron: string; timezone: string; enabled: boolean; catchup: string; overlap: string;
  priority?: string; worker_group: string; params: Record<string, string>; secret_params?: string[]; start_time?: string | null;
  end_time?: string | null; next_fire_time?: string | null; last_fire_time?: string | null; last_skipped_time?: string | null;
  skipped_fires: number; upcoming: string[]; note: string; revision: number; version: number; updated_by: string; updated_at: string;
  alerts?: Alerts | null; deadline?: string; calendar?: string; on_holiday?: string; pin_version?: number};

const CRON_HELP = '5 fields (minute hour day-of-month month day-of-week), 6 with leading seconds, or @daily, @hourly, @every 1h';

export function schedulePath(project: string, workflow: string): string {
  return `/api/v1/projects/${enc(project)}/workflows/${enc(workflow)}/schedule`;
}

// requestOf is the body that PUTs sc back as it is (enable/disable): its
// alerts, deadline and secret params included, so a toggle loses nothing.
export function requestOf(sc: Schedule): Record<string, unknown> {
  const r: Record<string, unknown> = {cron: sc.cron, timezone: sc.timezone, catchup: sc.catchup, overlap: sc.overlap, worker_group: sc.worker_group,
    params: sc.params, enabled: sc.enabled, by: user(), version: sc.version};
  if (sc.priority) r.priority = sc.priority;
  if (sc.start_time) r.start_time = sc.start_time;
  if (sc.end_time) r.end_time = sc.end_time;
  if (sc.secret_params?.length) r.secret_params = sc.secret_params;
  if (sc.alerts) r.alerts = sc.alerts;
  if (sc.deadline) r.deadline = sc.deadline;
  if (sc.calendar) { r.calendar = sc.calendar; if (sc.on_holiday) r.on_holiday = sc.on_holiday; }
  if (sc.pin_version) r.pin_version = sc.pin_version;
  return r;
}

function Enabled({sc}: {sc: Schedule}) {
  return <span className={'badge ' + (sc.enabled ? 'st-enabled' : 'st-disabled')}>{sc.enabled ? 'enabled' : 'disabled'}</span>;
}

function AlertsText({a}: {a?: Alerts | null}) {
  if (!a || (!a.on?.length && !a.channels?.length)) return <span className="muted">the workflow's</span>;
  return <span className="alerts">on {(a.on || []).join(', ') || 'nothing'} to {(a.channels || []).join(', ') || 'no channel'}</span>;
}

// SchedulePanel shows and edits a workflow's schedule; onChange is told
// each schedule shown (null: none), for the backfill form's defaults.
export function SchedulePanel({page, project, workflow, priority, group, onChange}: {page: Page; project: string; workflow: string;
  priority?: string; group?: string; onChange?: (sc: Schedule | null) => void}) {
  const [sc, setSc] = useState<Schedule | null | undefined>(undefined); // undefined: not read yet
  const [editing, setEditing] = useState(false);
  const editingRef = useRef(false);
  editingRef.current = editing;
  const shown = useRef<string>('');
  const restart = useRef<() => void>(() => {});
  const tell = useRef(onChange);
  tell.current = onChange;

  function show(s: Schedule | null) {
    // Only a change is told: a poll that reads the same schedule redraws nothing.
    const key = JSON.stringify(s);
    if (key === shown.current) return;
    shown.current = key;
    setSc(s);
    tell.current?.(s);
  }

  // Next fire and upcoming move with time: read again while only shown.
  // No schedule (a 404) is an answer, and nothing moves then: the poll
  // stops until a schedule is shown again.
  useEffect(() => {
    restart.current = page.poll(async () => {
      if (editingRef.current) return;
      let s: Schedule | null = null;
      try {
        s = await get(schedulePath(project, workflow), {signal: page.signal});
      } catch (e) {
        if ((e as {status?: number}).status !== 404) throw e;
      }
      if (!page.alive || editingRef.current) return;
      show(s);
      return s ? undefined : STOP_POLL;
    }, 10000);
  }, [page, project, workflow]); // eslint-disable-line react-hooks/exhaustive-deps

  function saved(s: Schedule | null) {
    setEditing(false);
    show(s);
    if (s) restart.current();
  }

  async function toggle(s: Schedule) {
    try {
      saved(await api('PUT', schedulePath(project, workflow), {json: {...requestOf(s), enabled: !s.enabled}}));
      flash(`Schedule ${s.enabled ? 'disabled' : 'enabled'}.`, 'ok');
    } catch (e) { flash(`Schedule of ${workflow}: ${describe(e)}`); }
  }

  async function del() {
    if (!await confirmDialog(`Delete the schedule of ${workflow}?`, 'No more runs are fired by it; past runs stay.', 'Delete')) return;
    try {
      await api('DELETE', schedulePath(project, workflow));
      flash('Schedule deleted.', 'ok');
      saved(null);
    } catch (e) { flash(`Delete schedule of ${workflow}: ${describe(e)}`); }
  }

  let body;
  if (editing) body = <ScheduleForm project={project} workflow={workflow} sc={sc || null} priority={priority} group={group}
    onSaved={saved} onCancel={() => setEditing(false)} />;
  else if (sc === undefined) body = <p className="muted">Loading…</p>;
  else if (sc === null) body = <>
    <p className="muted">Not scheduled: it runs only when started by hand.</p>
    <button type="button" id="schedule-set" onClick={() => setEditing(true)}>Set schedule</button></>;
  else {
    const z = sc.timezone;
    const rows: [string, React.ReactNode][] = [
      ['Cron', <code className="cron">{sc.cron}</code>],
      ['Timezone', z || 'UTC'],
      ['Status', <Enabled sc={sc} />],
      ['Next fire', <span className="next-fire">{sc.next_fire_time ? <Time iso={sc.next_fire_time} zone={z} /> : 'none'}</span>],
      ['Upcoming', sc.upcoming.length ? <ol className="upcoming">{sc.upcoming.map((t) => <li key={t}><Time iso={t} zone={z} /></li>)}</ol>
        : <span className="muted">{sc.enabled ? 'none left in the window' : 'none while disabled'}</span>],
      ['Last fire', <Time iso={sc.last_fire_time} zone={z} />],
      ['Catch-up', sc.catchup],
      ['Version', sc.pin_version ? <span className="pin-version">pinned to v{sc.pin_version}</span> : <span className="muted">the latest at each fire</span>],
      ['Calendar', sc.calendar ? <span className="calendar">{sc.calendar} <span className="muted">(on a day off: {sc.on_holiday || 'skip'})</span></span>
        : <span className="muted">none: every day</span>],
      ['Overlap', sc.skipped_fires ? <>{sc.overlap} ({sc.skipped_fires} fire(s) skipped, the last for <Time iso={sc.last_skipped_time} zone={z} />)</> : sc.overlap],
      ['Priority', sc.priority || `workflow's (${priority || 'medium'})`],
      ['Worker group', sc.worker_group || <span className="muted">workflow's</span>],
      ['Params', <ParamsText params={sc.params} />],
      ['Alerts', <AlertsText a={sc.alerts} />],
      ['Deadline', sc.deadline ? <code className="deadline">{sc.deadline}</code> : <span className="muted">the workflow's</span>],
    ];
    if (sc.start_time || sc.end_time) rows.push(['Window', <><Time iso={sc.start_time} /> → <Time iso={sc.end_time} /></>]);
    if (sc.note) rows.push(['Note', sc.note]);
    rows.push(['Updated', <><Time iso={sc.updated_at} /> by {sc.updated_by} (revision {sc.revision})</>]);
    body = <>
      <dl className="kv">{rows.map(([k, v]) => [<dt key={k + ':t'}>{k}</dt>, <dd key={k}>{v}</dd>])}</dl>
      <div className="buttons">
        <button type="button" id="schedule-edit" onClick={() => setEditing(true)}>Edit</button>
        <button type="button" id="schedule-toggle" onClick={() => toggle(sc)}>{sc.enabled ? 'Disable' : 'Enable'}</button>
        <button type="button" className="danger" id="schedule-delete" onClick={del}>Delete</button>
      </div>
      <Fires project={project} id={sc.id} zone={z} /></>;
  }
  return <section className="panel" id="schedule-panel" aria-labelledby="schedule-h"><h2 id="schedule-h">Schedule</h2>{body}</section>;
}

function ScheduleForm({project, workflow, sc, priority, group, onSaved, onCancel}: {project: string; workflow: string; sc: Schedule | null;
  priority?: string; group?: string; onSaved: (s: Schedule) => void; onCancel: () => void}) {
  const zone = userZone();
  const local = (iso?: string | null) => (iso ? inputValue(Date.parse(iso), zone) : '');
  const [cron, setCron] = useState(sc?.cron || '');
  const [tz, setTz] = useState(sc?.timezone || '');
  const [start, setStart] = useState(local(sc?.start_time));
  const [end, setEnd] = useState(local(sc?.end_time));
  const [catchup, setCatchup] = useState(sc?.catchup || 'latest');
  const [overlap, setOverlap] = useState(sc?.overlap || 'allow');
  const [cal, setCal] = useState(sc?.calendar || '');
  const [onHoliday, setOnHoliday] = useState(sc?.on_holiday || 'skip');
  const [pin, setPin] = useState(sc?.pin_version ? String(sc.pin_version) : '');
  const [prio, setPrio] = useState(sc?.priority || '');
  const [wg, setWg] = useState(sc?.worker_group || '');
  const [params, setParams] = useParams(sc?.params);
  const [enabled, setEnabled] = useState(sc ? sc.enabled : true);
  const [alertOn, setAlertOn] = useState<string[]>(sc?.alerts?.on || []);
  const [channels, setChannels] = useState<string[]>(sc?.alerts?.channels || []);
  const [deadline, setDeadline] = useState(sc?.deadline || '');
  const [err, setErr] = useState('');
  const [busy, setBusy] = useState(false);
  const cronRef = useRef<HTMLInputElement>(null);
  useEffect(() => { cronRef.current?.focus(); }, []);

  async function submit(e: FormEvent) {
    e.preventDefault();
    setErr('');
    const req: Record<string, unknown> = {cron: cron.trim(), timezone: tz.trim(), catchup, overlap, worker_group: wg.trim(), params: valuesOf(params),
      enabled, by: user(), version: sc ? sc.version : 0};
    if (sc?.secret_params?.length) req.secret_params = sc.secret_params.filter((k) => k in (req.params as Record<string, string>));
    if (prio) req.priority = prio;
    const from = rfc3339Local(start), until = rfc3339Local(end);
    if (from === null || until === null) { setErr('The window start or end is not a valid date and time.'); return; }
    if (from) req.start_time = from;
    if (until) req.end_time = until;
    if (alertOn.length || channels.length) req.alerts = {on: alertOn, channels};
    if (deadline.trim()) req.deadline = deadline.trim();
    if (cal.trim()) { req.calendar = cal.trim(); req.on_holiday = onHoliday; }
    const p = pin.trim();
    if (/^[0-9]+$/.test(p) && p.length < 10) req.pin_version = Number(p);
    else if (p) req.pin_commit = p; // a Git commit; the API says when it made no version
    setBusy(true);
    try {
      const out = await api('PUT', schedulePath(project, workflow), {json: req});
      flash('Schedule saved.', 'ok');
      onSaved(out);
    } catch (ex) { setErr(describe(ex)); } finally { setBusy(false); }
  }

  const sel = (id: string, name: string, value: string, set: (v: string) => void, opts: [string, string][]) =>
    <select id={id} name={name} value={value} onChange={(e) => set(e.target.value)}>{opts.map(([v, l]) => <option key={v} value={v}>{l}</option>)}</select>;
  return (
    <form className="form" id="schedule-form" onSubmit={submit}>
      <label className="field"><span>Cron</span><input name="cron" id="schedule-cron" ref={cronRef} value={cron} placeholder="0 2 * * *" required
        spellCheck={false} title={CRON_HELP} onChange={(e) => setCron(e.target.value)} /></label>
      <p className="hint">{CRON_HELP}</p>
      <label className="field"><span>Timezone</span><input name="timezone" id="schedule-tz" value={tz} spellCheck={false}
        placeholder={`UTC (yours: ${zone})`} onChange={(e) => setTz(e.target.value)} /></label>
      <label className="field"><span>Calendar</span><input name="calendar" id="schedule-calendar-name" value={cal} spellCheck={false}
        placeholder="none: fire every day" title="a business calendar: the project's own of this name, else a shared one"
        onChange={(e) => setCal(e.target.value)} /></label>
      <label className="field"><span>On a day off</span>{sel('schedule-on-holiday', 'on_holiday', onHoliday, setOnHoliday, [['skip', 'skip the fire'],
        ['next_business_day', 'fire on the next business day'], ['previous_business_day', 'fire on the business day before']])}</label>
      <p className="hint">With a calendar, a fire due on a weekend day or holiday is skipped or moved; a moved fire merges into that day's own.</p>
      <label className="field"><span>Pin version</span><input name="pin" id="schedule-pin" value={pin} spellCheck={false}
        placeholder="none: the latest at each fire" title="a version number, or (a Git project's) the commit whose sync made the version"
        onChange={(e) => setPin(e.target.value)} /></label>
      <div className="field"><span>Next fires</span><Preview cron={cron} tz={tz} project={project} calendar={cal} onHoliday={onHoliday} /></div>
      <label className="field"><span>Catch-up</span>{sel('schedule-catchup', 'catchup', catchup, setCatchup, [['latest', 'latest: one run for the newest missed time'],
        ['all', 'all missed times'], ['none', 'none: skip missed times']])}</label>
      <label className="field"><span>Overlap</span>{sel('schedule-overlap', 'overlap', overlap, setOverlap, [['allow', 'allow: runs may overlap'],
        ['skip', 'skip: no fire while a run is unfinished'], ['wait', 'wait: queue the fire until the previous run ends'],
        ['replace', 'replace: stop the unfinished run, then run']])}</label>
      <label className="field"><span>Priority</span>{sel('schedule-priority', 'priority', prio, setPrio,
        [['', `workflow's (${priority || 'medium'})`], ...PRIORITIES.map((p): [string, string] => [p, p])])}</label>
      <label className="field"><span>Worker group</span><input name="worker_group" id="schedule-group" value={wg} placeholder={group || 'default'}
        spellCheck={false} onChange={(e) => setWg(e.target.value)} /></label>
      <div className="field"><span>Params</span><Params rows={params} onChange={setParams} /></div>
      <label className="field"><span>From</span><input type="datetime-local" step={1} name="start_time" id="schedule-start" value={start}
        onChange={(e) => setStart(e.target.value)} /></label>
      <label className="field"><span>Until</span><input type="datetime-local" step={1} name="end_time" id="schedule-end" value={end}
        onChange={(e) => setEnd(e.target.value)} /></label>
      <p className="hint">From and Until are in your zone ({zone}).</p>
      <fieldset className="field" id="schedule-alerts"><legend>Alerts</legend>
        <p className="hint">For this schedule's runs, instead of the workflow's; none ticked: the workflow's.</p>
        <div className="checks" role="group" aria-label="alert on">
          {ALERT_TRIGGERS.map((on) => <label key={on}><input type="checkbox" name="alert_on" value={on} checked={alertOn.includes(on)}
            onChange={(e) => setAlertOn(e.target.checked ? [...alertOn, on] : alertOn.filter((x) => x !== on))} /> on {on}</label>)}
        </div>
        <ChannelPicker value={channels} onChange={setChannels} />
      </fieldset>
      <label className="field"><span>Deadline</span><input name="deadline" id="schedule-deadline" value={deadline} placeholder="06:00 or 2h" spellCheck={false}
        title="a run not succeeded by then alerts: a wall time in the schedule's zone (06:00) or a duration after the schedule time (2h)"
        onChange={(e) => setDeadline(e.target.value)} /></label>
      <p className="hint">Deadline: a wall time in the schedule's zone (06:00) or a duration after the schedule time (2h); empty: the workflow's.</p>
      <label className="field"><span>Enabled</span><span><input type="checkbox" name="enabled" id="schedule-enabled" checked={enabled}
        onChange={(e) => setEnabled(e.target.checked)} /></span></label>
      <pre className="apierror" role="alert" id="schedule-error" hidden={!err}>{err}</pre>
      <div className="buttons">
        <button type="submit" className="primary" id="schedule-save" disabled={busy}>Save schedule</button>
        <button type="button" onClick={onCancel}>Cancel</button>
      </div>
    </form>
  );
}

// ChannelPicker ticks the alert channels (GET /api/v1/alert-channels);
// when they cannot be listed their names are typed, comma-separated.
function ChannelPicker({value, onChange}: {value: string[]; onChange: (v: string[]) => void}) {
  const [names, err] = useList<{name: string}>('/api/v1/alert-channels');
  if (err || (names && !names.length && value.length)) {
    return <label className="chtyped">Channels <input id="schedule-channels" aria-label="alert channels" value={value.join(', ')} spellCheck={false}
      onChange={(e) => onChange(e.target.value.split(',').map((x) => x.trim()).filter(Boolean))} /></label>;
  }
  if (names === null) return <p className="muted">Loading the alert channels…</p>;
  const all = [...new Set([...names.map((c) => c.name), ...value])];
  if (!all.length) return <p className="hint">No alert channel yet: add one on the <a href="#/alert-channels">alert channels</a> page.</p>;
  return <div className="checks" role="group" aria-label="alert channels">
    {all.map((c) => <label key={c}><input type="checkbox" name="alert_channel" value={c} checked={value.includes(c)}
      onChange={(e) => onChange(e.target.checked ? [...value, c] : value.filter((x) => x !== c))} /> {c}</label>)}
  </div>;
}

type PreviewState = {kind: 'none'} | {kind: 'err'; text: string}
  | {kind: 'ok'; cron: string; zone: string; times: string[]; calendar?: string; onHoliday?: string; refused: Refused[]};

// Preview shows the next fire times of the cron and zone typed, as the API
// computes them (POST /api/v1/schedule-preview), on the schedule's clock,
// asked 300 ms after typing stops; an older answer never overwrites a newer.
function Preview({cron, tz, project, calendar, onHoliday}: {cron: string; tz: string; project: string; calendar: string; onHoliday: string}) {
  const [st, setSt] = useState<PreviewState>({kind: 'none'});
  const first = useRef(true);
  useEffect(() => {
    const expr = cron.trim(), zone = tz.trim(), cal = calendar.trim();
    const ctrl = new AbortController();
    const t = setTimeout(async () => {
      if (!expr) { setSt({kind: 'none'}); return; }
      try {
        const req: Record<string, unknown> = {cron: expr, timezone: zone, count: 50};
        if (cal) Object.assign(req, {project, calendar: cal, on_holiday: onHoliday});
        const r = await api('POST', '/api/v1/schedule-preview', {json: req, signal: ctrl.signal});
        setSt({kind: 'ok', cron: expr, zone: zone || 'UTC', times: r.times, calendar: r.calendar, onHoliday: r.on_holiday, refused: r.refused || []});
      } catch (e) {
        if (!ctrl.signal.aborted) setSt({kind: 'err', text: describe(e)});
      }
    }, first.current ? 0 : 300);
    first.current = false;
    return () => { clearTimeout(t); ctrl.abort(); };
  }, [cron, tz, project, calendar, onHoliday]);
  const mine = userZone();
  return (
    <div className="schedule-preview" id="schedule-preview" aria-live="polite">
      {st.kind === 'none' ? <span className="muted">Type a cron to see when it fires.</span>
        : st.kind === 'err' ? <span className="apierror preview-error" role="status">{st.text}</span>
          : <>
            <ol className="fires preview" data-cron={st.cron} data-zone={st.zone}>{st.times.slice(0, 5).map((t) => {
              const wall = validZone(st.zone) ? formatIn(t, st.zone) : t;
              const yours = formatIn(t, mine);
              return <li key={t} title={`${yours} ${mine} (yours)\n${formatIn(t, 'UTC')} UTC`}><time dateTime={t}>{wall}</time> <span className="muted">{st.zone}</span>
                {st.zone !== mine && yours !== wall ? <span className="yourzone"> ({yours} {mine})</span> : null}</li>;
            })}</ol>
            {st.calendar ? <Shown st={st} /> : null}
            <Calendar times={st.times} zone={mine} />
          </>}
    </div>
  );
}

// Shown names the calendar of a preview and the cron times it moved or
// dropped up to the last fire listed.
function Shown({st}: {st: Extract<PreviewState, {kind: 'ok'}>}) {
  const last = st.times.length ? new Date(st.times[Math.min(4, st.times.length - 1)]).getTime() : 0;
  const refused = st.refused.filter((r) => new Date(r.time).getTime() <= last);
  return <div className="preview-calendar" id="schedule-preview-calendar">
    <p className="hint">{calendarLine(st.calendar, st.onHoliday, refused)} among these.</p>
    <RefusedList refused={refused} zone={validZone(st.zone) ? st.zone : 'UTC'} />
  </div>;
}

const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];

// Calendar shows the months of the next fire times (up to two), each day
// with a fire marked with how many, in zone (the user's).
function Calendar({times, zone}: {times: string[]; zone: string}) {
  const byDay = new Map<string, string[]>();
  for (const t of times) {
    const d = dayIn(t, zone);
    (byDay.get(d) || byDay.set(d, []).get(d)!).push(formatIn(t, zone).slice(11));
  }
  if (!byDay.size) return null;
  const days = [...byDay.keys()].sort();
  const months = [...new Set(days.map((d) => d.slice(0, 7)))].slice(0, 2);
  return (
    <div className="firecal" id="schedule-calendar">
      <p className="hint">The next {times.length} fires by day, in your zone ({zone}).</p>
      {months.map((ym) => {
        const [y, m] = ym.split('-').map(Number);
        const lead = (new Date(Date.UTC(y, m - 1, 1)).getUTCDay() + 6) % 7; // weeks start on Monday
        const n = new Date(Date.UTC(y, m, 0)).getUTCDate();
        const cells: React.ReactNode[] = [];
        for (let i = 0; i < lead; i++) cells.push(<td key={'l' + i} />);
        for (let d = 1; d <= n; d++) {
          const key = `${ym}-${String(d).padStart(2, '0')}`;
          const at = byDay.get(key);
          cells.push(at ? <td key={key} className="fire" data-day={key} title={at.join('\n')}>{d}<span className="n">{at.length > 1 ? `×${at.length}` : ''}</span></td>
            : <td key={key}>{d}</td>);
        }
        const rows: React.ReactNode[] = [];
        for (let i = 0; i < cells.length; i += 7) rows.push(<tr key={i}>{cells.slice(i, i + 7)}</tr>);
        return <table className="cal" key={ym}><caption>{MONTHS[m - 1]} {y}</caption>
          <thead><tr>{['Mo', 'Tu', 'We', 'Th', 'Fr', 'Sa', 'Su'].map((x) => <th scope="col" key={x}>{x}</th>)}</tr></thead><tbody>{rows}</tbody></table>;
      })}
    </div>
  );
}
