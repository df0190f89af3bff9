-- A catch-up by the watermark: everything below the smallest revision in flight (else the
-- last allocated) has ended, and the bound is read in the snapshot the page is read in. It
-- keeps what it saw (a revision seen twice breaks the primary key) and its cursor.
BEGIN ISOLATION LEVEL REPEATABLE READ;
SELECT COALESCE((SELECT cursor FROM floor_cursors WHERE reader = :client_id), 0) AS cursor,
  COALESCE((SELECT min(revision) - 1 FROM floor_inflight), (SELECT value FROM floor_state WHERE key = 'allocated')) AS bound \gset
INSERT INTO floor_seen (reader, revision) SELECT :client_id, revision FROM floor_log WHERE revision > :cursor AND revision <= :bound;
INSERT INTO floor_cursors VALUES (:client_id, :bound) ON CONFLICT (reader) DO UPDATE SET cursor = EXCLUDED.cursor;
COMMIT;
