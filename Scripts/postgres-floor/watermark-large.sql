-- A write of 10,000 records with its revision taken first: nothing shared stays locked.
WITH a AS (UPDATE floor_state SET value = value + 1 WHERE key = 'allocated' RETURNING value),
  i AS (INSERT INTO floor_inflight SELECT value, pg_backend_pid(), NULL FROM a RETURNING revision)
SELECT revision AS first FROM i \gset
BEGIN;
WITH r AS (INSERT INTO floor_records (name, revision) SELECT 'large ' || g, :first::BIGINT FROM generate_series(1, 10000) g RETURNING id, revision),
  l AS (INSERT INTO floor_log SELECT 'r', id, revision FROM r)
DELETE FROM floor_inflight WHERE revision = :first::BIGINT;
COMMIT;
