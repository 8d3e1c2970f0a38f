// Gantt: every attempt on a time axis, queued (submitted to started) and
// running (started to ended or now), retries as their own rows, the
// critical path marked (by a symbol and an outline, not colour alone), a
// time axis of round ticks in the user's zone (zone.ts: the one chosen in
// the header, else the browser's) across the top.
import {useMemo, useState} from 'react';
import type {TaskAttempt} from './graph';
import {stateClass, stateLabel} from './states';
import {duration} from './ui';
import {tickLabel, ticks} from './timeaxis';
import {dayIn, userZone} from './zone';

const ROW = 22, LABEL = 220, MAXROWS = 2000, AXIS = 22;

const t = (iso?: string | null) => (iso ? new Date(iso).getTime() : NaN);

export function Gantt({tasks, critical, onOpen}: {tasks: TaskAttempt[]; critical: Set<string>; onOpen: (t: TaskAttempt) => void}) {
  const [width, setWidth] = useState(900);
  const zone = userZone();
  const rows = useMemo(() => tasks.filter((x) => x.start_time || x.submit_time)
    .sort((a, b) => (t(a.submit_time || a.start_time) - t(b.submit_time || b.start_time)) || a.id - b.id), [tasks]);
  const now = Date.now();
  let lo = Infinity, hi = -Infinity;
  for (const r of rows) {
    lo = Math.min(lo, t(r.submit_time || r.start_time));
    hi = Math.max(hi, r.end_time ? t(r.end_time) : now);
  }
  if (!rows.length) return <p className="muted gantt-empty">No attempt has started yet.</p>;
  const span = Math.max(1, hi - lo);
  const x = (ms: number) => LABEL + ((ms - lo) / span) * (width - LABEL - 10);
  const shown = rows.slice(0, MAXROWS);
  const axis = ticks(lo, hi, Math.max(2, Math.floor((width - LABEL) / 110)));
  const spansDays = dayIn(new Date(lo).toISOString(), zone) !== dayIn(new Date(hi).toISOString(), zone);
  const h = shown.length * ROW + AXIS + 4;
  return (
    <div className="gantt" ref={(el) => { if (el && Math.abs(el.clientWidth - width) > 20) setWidth(Math.max(500, el.clientWidth)); }}>
      <p className="muted">{rows.length} attempts over {duration(new Date(lo).toISOString(), new Date(hi).toISOString())}.
        <span className="crit-key"> ★ critical path ({critical.size} tasks)</span>; light bar: queued, solid: running.
        {rows.length > MAXROWS ? ` The first ${MAXROWS} are shown.` : ''}</p>
      <svg width={width} height={h} role="img" aria-label={`Gantt chart of the attempts, time axis in ${zone}`}>
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
      </svg>
    </div>
  );
}
