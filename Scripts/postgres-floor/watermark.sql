-- Revisions taken first, in a statement of their own (its commit keeps the allocation row's
-- lock for that statement only), each registered in flight; the write commits whenever it
-- is done and takes its revisions out of flight in the same transaction. `:slow` (ms): a
-- random wait inside the transaction, so that writes commit out of their numbers' order;
-- `:aborts` (%): writes that roll back, and then take their revisions out of flight alone;
-- `:most`: each write takes 1 to that many revisions (one record each). `started` (the
-- backend's start, which the reaper matches with the pid) is left NULL here: a server reads
-- it once per connection and binds it; these runs have no reaper.
\set k random(1, :most)
WITH a AS (UPDATE floor_state SET value = value + :k WHERE key = 'allocated' RETURNING value),
  i AS (INSERT INTO floor_inflight SELECT g, pg_backend_pid(), NULL FROM a, generate_series(a.value - :k::BIGINT + 1, a.value) g RETURNING revision)
SELECT min(revision) AS first, max(revision) AS last FROM i \gset
BEGIN;
WITH r AS (INSERT INTO floor_records (name, revision) SELECT 'x', g FROM generate_series(:first::BIGINT, :last::BIGINT) g RETURNING id, revision),
  l AS (INSERT INTO floor_log SELECT 'r', id, revision FROM r)
DELETE FROM floor_inflight WHERE revision BETWEEN :first::BIGINT AND :last::BIGINT;
SELECT count(*) FROM floor_log WHERE revision > :first - 3;
\set wait random(0, :slow)
\sleep :wait ms
\set roll random(1, 100)
\if :roll <= :aborts
ROLLBACK;
DELETE FROM floor_inflight WHERE revision BETWEEN :first::BIGINT AND :last::BIGINT;
\else
COMMIT;
\endif
