-- Revisions left in flight by a backend that is gone (its process killed, its connection
-- cut): their transactions rolled back, so they are gaps; nobody else will take them out.
-- A backend is named by its pid and its start, so a pid used again is not taken for it.
DELETE FROM floor_inflight i
WHERE NOT EXISTS (SELECT 1 FROM pg_stat_activity a WHERE a.pid = i.pid AND a.backend_start IS NOT DISTINCT FROM i.started);
