// Gantt: every attempt on a time axis, queued (submitted to started) and
// running (started to ended or now), retries as their own rows, the
// critical path marked (by a symbol and an outline, not colour alone), a
// time axis of round ticks in the user's zone (zone.ts: the one chosen in
// the header, else the browser's) across the top. For a running instance
// with a forecast, each remaining task's projected span is drawn hatched
// (in its attempt's row, or a row of its own when it has none yet) and the
// projected end of the instance is a dashed line; the axis reaches it.
import {useMemo, useState} from 'react';
import {projectionBars, type Forecast} from './forecast';
import type {TaskAttempt} from './graph';
import {stateClass, stateLabel} from './states';
import {duration} from './ui';
import {tickLabel, ticks} from './timeaxis';
import {dayIn, userZone} from './zone';

const ROW = 22, LABEL = 220, MAXROWS = 2000, AXIS = 22;

const t = (iso?: string | null) => (iso ? new Date(iso).getTime() : NaN);

export function Gantt({tasks, critical, onOpen, forecast = null, ended}: {tasks: TaskAttempt[]; critical: Set<string>;
  onOpen: (t: TaskAttempt) => void; forecast?: Forecast | null; ended?: Set<string>}) {
  const [width, setWidth] = useState(900);
  const zone = userZone();
  const rows = useMemo(() => tasks.filter((x) => x.start_time || x.submit_time)
    .sort((a, b) => (t(a.submit_time || a.start_time) - t(b.submit_time || b.start_time)) || a.id - b.id), [tasks]);
  const now = Date.now();
  const bars = projectionBars(forecast, ended || new Set(), now);
  const projEnd = forecast && bars.length ? t(forecast.end) : NaN;
  let lo = Infinity, hi = -Infinity;
  for (const r of rows) {
    lo = Math.min(lo, t(r.submit_time || r.start_time));
    hi = Math.max(hi, r.end_time ? t(r.end_time) : now);
  }
  for (const b of bars) { lo = Math.min(lo, b.start); hi = Math.max(hi, b.end); }
  // The projected end, a little inside the right edge so its line shows.
  if (!Number.isNaN(projEnd)) hi = Math.max(hi, projEnd + (Math.max(hi, projEnd) - lo) / 50);
  if (!rows.length && !bars.length) return <p className="muted gantt-empty">No attempt has started yet.</p>;
  const span = Math.max(1, hi - lo);
  const x = (ms: number) => LABEL + ((ms - lo) / span) * (width - LABEL - 10);
  const shown = rows.slice(0, MAXROWS);
  // A projected span goes in the row of its task's latest attempt shown,
  // else in a row of its own after the attempts.
  const rowOf = new Map<string, number>();
  shown.forEach((r, i) => { if (!r.superseded) rowOf.set(r.name, i); });
  const extra = bars.filter((b) => !rowOf.has(b.name)).slice(0, Math.max(0, MAXROWS - shown.length));
  extra.forEach((b, i) => rowOf.set(b.name, shown.length + i));
  const nrows = shown.length + extra.length;
  const axis = ticks(lo, hi, Math.max(2, Math.floor((width - LABEL) / 110)));
  const spansDays = dayIn(new Date(lo).toISOString(), zone) !== dayIn(new Date(hi).toISOString(), zone);
  const h = nrows * ROW + AXIS + 4;
  return (
    <div className="gantt" ref={(el) => { if (el && Math.abs(el.clientWidth - width) > 20) setWidth(Math.max(500, el.clientWidth)); }}>
      <p className="muted">{rows.length} attempts over {duration(new Date(lo).toISOString(), new Date(hi).toISOString())}.
        <span className="crit-key"> ★ critical path ({critical.size} tasks)</span>; light bar: queued, solid: running.
        {bars.length ? <span className="proj-key"> <svg width="22" height="10" aria-hidden="true"><rect className="proj" x="0" y="0" width="22" height="10" /></svg> projected
          (what remains, from history), dashed line: projected end.</span> : null}
        {rows.length > MAXROWS ? ` The first ${MAXROWS} are shown.` : ''}</p>
      <svg width={width} height={h} role="img" aria-label={`Gantt chart of the attempts, time axis in ${zone}`}>
        <defs>
          <pattern id="gantt-hatch" patternUnits="userSpaceOnUse" width="6" height="6" patternTransform="rotate(45)">
            <rect className="hatch-bg" width="6" height="6" /><line className="hatch" x1="0" y1="0" x2="0" y2="6" />
          </pattern>
        </defs>
        <g className="axis" aria-hidden="true">
          <text x={4} y={14} className="zone">{zone}</text>
          {axis.at.map((at, i) => (
            <g key={at} className="tick" data-at={new Date(at).toISOString()}>
              <line x1={x(at)} x2={x(at)} y1={AXIS - 4} y2={h} />
              <text x={x(at)} y={14} textAnchor="middle">{tickLabel(at, axis.step, i === 0, spansDays, zone)}</text>
            </g>
          ))}
        </g>
        {shown.map((r, i) => {
          const y = i * ROW + AXIS;
          const q0 = t(r.submit_time), s0 = t(r.start_time), e0 = r.end_time ? t(r.end_time) : now;
          const crit = critical.has(r.name) && !r.superseded;
          return (
            <g key={r.id} className={['bar', stateClass(r.state), crit && 'critical'].filter(Boolean).join(' ')} data-task={r.name}
              data-attempt={r.attempt} data-id={r.id} onClick={() => onOpen(r)} tabIndex={0}
              onKeyDown={(e) => { if (e.key === 'Enter') onOpen(r); }}>
              <title>{`${r.name} #${r.attempt}: ${stateLabel(r.state)}${r.start_time ? ', ran ' + duration(r.start_time, r.end_time) : ''}`}</title>
              <text x={4} y={y + 13} className="glabel">{crit ? '★ ' : ''}{r.name}{r.attempt > 1 ? ` #${r.attempt}` : ''}</text>
              {!Number.isNaN(q0) && !Number.isNaN(s0) && s0 > q0 ? <rect className="queued" x={x(q0)} y={y + 3} width={Math.max(1, x(s0) - x(q0))} height={ROW - 8} /> : null}
              {!Number.isNaN(s0) ? <rect className="run" x={x(s0)} y={y + 1} width={Math.max(2, x(e0) - x(s0))} height={ROW - 4} rx={2} /> : null}
            </g>
          );
        })}
        {extra.map((b, i) => {
          const y = (shown.length + i) * ROW + AXIS;
          return <text key={b.name} x={4} y={y + 13} className="glabel proj-label" data-task={b.name}>{b.critical ? '★ ' : ''}{b.name}</text>;
        })}
        {bars.filter((b) => rowOf.has(b.name)).map((b) => {
          const y = rowOf.get(b.name)! * ROW + AXIS;
          return (
            <rect key={b.name} className={['proj', b.critical && 'critical'].filter(Boolean).join(' ')} data-task={b.name} data-running={b.running || undefined}
              x={x(b.start)} y={y + 1} width={Math.max(2, x(b.end) - x(b.start))} height={ROW - 4} rx={2}>
              <title>{`projected: ${b.name} ${b.running ? 'running until' : 'ends'} ~${tickLabel(b.end, 1000, false, false, zone)}`}</title>
            </rect>
          );
        })}
        {!Number.isNaN(projEnd) ? (
          <g className="proj-end" data-at={forecast!.end}>
            <title>{`projected end of the instance: ${tickLabel(projEnd, 1000, false, spansDays, zone)}`}</title>
            <line x1={x(projEnd)} x2={x(projEnd)} y1={AXIS - 4} y2={h} />
          </g>) : null}
      </svg>
    </div>
  );
}
