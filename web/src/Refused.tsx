// The cron times a business calendar did not run as themselves (moved to
// another business day, or dropped), as a backfill and the schedule
// preview answer them: the fire ledger's refused_calendar.
import {Time} from './ui';

export type Refused = {time: string; outcome: string; moved_to?: string};
const POLICY: Record<string, string> = {skip: 'skipped', next_business_day: 'moved to the next business day',
  previous_business_day: 'moved to the previous business day'};

// calendarLine says which calendar decided a backfill's times and what it
// did with the cron's times on days off.
export function calendarLine(calendar: string | undefined, onHoliday: string | undefined, refused: Refused[]): string {
  if (!calendar) return 'no business calendar: every cron time runs';
  const moved = refused.filter((r) => r.moved_to).length;
  return `calendar ${calendar}: times on days off are ${POLICY[onHoliday || 'skip'] || onHoliday}; ` +
    `${moved} moved, ${refused.length - moved} dropped`;
}

// RefusedList is the cron times a calendar did not run as themselves.
export function RefusedList({refused, zone}: {refused: Refused[]; zone: string}) {
  if (!refused.length) return null;
  return <ul className="refused" aria-label="cron times refused by the calendar">{refused.map((r) => (
    <li key={r.time} data-refused={r.time} data-moved={r.moved_to || ''}><Time iso={r.time} zone={zone} />{' '}
      {r.moved_to ? <span className="moved">moved to <Time iso={r.moved_to} zone={zone} /></span>
        : <span className="moved">dropped (refused_calendar)</span>}</li>))}</ul>;
}

