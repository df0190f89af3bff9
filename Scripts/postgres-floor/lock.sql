-- Today's order: the state row locked from the first statement to the commit.
BEGIN;
SELECT value FROM floor_state WHERE key = 'maxRevision' FOR UPDATE;
WITH r AS (INSERT INTO floor_records (name, revision) SELECT 'x', value + 1 FROM floor_state WHERE key = 'maxRevision' RETURNING id, revision)
INSERT INTO floor_log SELECT 'r', id, revision FROM r;
UPDATE floor_state SET value = value + 1 WHERE key = 'maxRevision';
SELECT count(*) FROM floor_log WHERE revision > (SELECT value FROM floor_state WHERE key = 'maxRevision') - 3;
COMMIT;
