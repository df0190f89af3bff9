-- Today's order, a write of 10,000 records: the state row locked throughout.
BEGIN;
SELECT value FROM floor_state WHERE key = 'maxRevision' FOR UPDATE;
WITH r AS (INSERT INTO floor_records (name, revision) SELECT 'large ' || g, s.value + 1 FROM floor_state s, generate_series(1, 10000) g
    WHERE s.key = 'maxRevision' RETURNING id, revision)
INSERT INTO floor_log SELECT 'r', id, revision FROM r;
UPDATE floor_state SET value = value + 1 WHERE key = 'maxRevision';
COMMIT;
