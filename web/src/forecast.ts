// A running instance's forecast (GET /api/v1/instances/{id}?forecast=true):
// what the page says of it and the bars the Gantt draws of it. Pure,
// unit-tested with vitest.

export interface ForecastTask {name: string; start: string; end: string; running: boolean}

export interface Forecast {
  end: string; p90_end: string; critical_path: string[]; no_history: string[]; slow: string[];
  deadline?: string; late: boolean; at: string; tasks?: ForecastTask[]; tasks_total?: number;
}

// guessed names the tasks of the critical path with no recent successful
// run: the end waits on a default, not on history, so the page shows no
// number (empty: the projection stands on history).
export function guessed(f: Forecast): string[] {
  const none = new Set(f.no_history || []);
  return (f.critical_path || []).filter((n) => none.has(n));
}

// untilText is how far end (ms) is from now, as a person says it.
export function untilText(end: number, now: number): string {
  const ms = end - now;
  if (!(ms > 0)) return 'any moment now';
  if (ms < 60000) return 'in under a minute';
  const min = Math.round(ms / 60000);
  if (min < 90) return `in ~${min} min`;
  const h = Math.floor(min / 60), m = min % 60;
  if (h < 48) return `in ~${h} h${m ? ` ${m} min` : ''}`;
  return `in ~${Math.round(h / 24)} days`;
}

export interface ProjectionBar {name: string; start: number; end: number; running: boolean; critical: boolean}

// projectionBars are the spans the Gantt draws for the forecast's
// remaining tasks at now: a running task from now (the forecast may be up
// to a poll old) to its projected end, a waiting one over its projected
// span; a task whose latest attempt has ended since the forecast was made
// (ended) has none.
export function projectionBars(f: Forecast | null | undefined, ended: Set<string>, now: number): ProjectionBar[] {
  if (!f || !f.tasks) return [];
  const crit = new Set(f.critical_path || []);
  const out: ProjectionBar[] = [];
  for (const t of f.tasks) {
    if (ended.has(t.name)) continue;
    let start = new Date(t.start).getTime();
    const end = new Date(t.end).getTime();
    if (Number.isNaN(start) || Number.isNaN(end)) continue;
    if (t.running) start = Math.min(Math.max(start, now), end);
    out.push({name: t.name, start, end: Math.max(start, end), running: t.running, critical: crit.has(t.name)});
  }
  return out;
}
