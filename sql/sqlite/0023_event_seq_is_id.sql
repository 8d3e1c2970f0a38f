-- On SQLite an event's public seq is its id from here on (common/store/
-- events.go, seqIsID): ids commit in order under the one write lock, so
-- rows need no numbering after their commit, and the seq column and its
-- index are no longer written or read. Before that, every row's seq must be
-- its id, which the old publisher already gave (seq = id + k, k = 0 with one
-- writer); the statements below also hold when it did not. Each is safe to
-- run again, as after a crash part way through this file.
--
-- Rows the old publisher had not numbered yet get the seq it would have
-- given them: in id order, after the highest seq.
UPDATE event SET seq = id + MAX(0, (SELECT COALESCE(MAX(seq), 0) FROM event) - (SELECT MIN(id) FROM event WHERE seq IS NULL) + 1)
  WHERE seq IS NULL;
-- Each row's id becomes its seq (the unique seqs keep the ids unique), by
-- way of negative ids so that no row takes an id another still holds.
UPDATE event SET id = -seq WHERE id <> seq;
UPDATE event SET id = -id WHERE id < 0;
-- New ids follow the highest seq ever given.
UPDATE sqlite_sequence SET seq = (SELECT MAX(id) FROM event)
  WHERE name = 'event' AND seq < (SELECT MAX(id) FROM event);
DROP INDEX IF EXISTS uk_event_seq;
