-- A backfill of a schedule with a business calendar honours it as the
-- schedule's fires do (docs/architecture.md, "Backfills"): the calendar and
-- policy it was decided under, and the cron times the calendar did not run
-- as themselves (JSON [{"time":..., "moved_to":...}], moved_to absent when
-- dropped), the ledger of fires' refused_calendar.
ALTER TABLE backfill ADD COLUMN calendar VARCHAR(128) NOT NULL DEFAULT '';
ALTER TABLE backfill ADD COLUMN on_holiday VARCHAR(32) NOT NULL DEFAULT '';
ALTER TABLE backfill ADD COLUMN refused_json TEXT NULL;
