-- Tables of the ordering floor (see run): a state row, one entity, its log, the revisions in
-- flight, and what each checking reader saw.
DROP TABLE IF EXISTS floor_state, floor_records, floor_log, floor_inflight, floor_seen, floor_cursors;
CREATE TABLE floor_state (key TEXT PRIMARY KEY, value BIGINT NOT NULL);
INSERT INTO floor_state VALUES ('maxRevision', 0), ('allocated', 0);
CREATE TABLE floor_records (id BIGSERIAL PRIMARY KEY, name TEXT NOT NULL, revision BIGINT NOT NULL);
CREATE TABLE floor_log (entity TEXT NOT NULL, id BIGINT NOT NULL, revision BIGINT NOT NULL, PRIMARY KEY (entity, id));
CREATE INDEX floor_log_revision ON floor_log (revision, entity, id);
CREATE TABLE floor_inflight (revision BIGINT PRIMARY KEY, pid INT NOT NULL, started TIMESTAMPTZ);
CREATE TABLE floor_seen (reader INT NOT NULL, revision BIGINT NOT NULL, PRIMARY KEY (reader, revision));
CREATE TABLE floor_cursors (reader INT PRIMARY KEY, cursor BIGINT NOT NULL);
