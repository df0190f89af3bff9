-- The same catch-up with the bound wrong on purpose (the last allocated revision, in flight or
-- not): the check must find revisions it skipped.
-- (Proves that the check can fail.)
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT COALESCE((SELECT cursor FROM floor_cursors WHERE reader = :client_id), 0) AS cursor,
  (SELECT value FROM floor_state WHERE key = 'allocated') AS bound \gset
INSERT INTO floor_seen (reader, revision) SELECT :client_id, revision FROM floor_log WHERE revision > :cursor AND revision <= :bound;
INSERT INTO floor_cursors VALUES (:client_id, :bound) ON CONFLICT (reader) DO UPDATE SET cursor = EXCLUDED.cursor;
COMMIT;
