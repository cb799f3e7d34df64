-- A session store (read-only mode) numbers its datasets -1, -2, ... so they never
-- collide with the stored ones (1, 2, ...) they are listed beside.
CREATE SEQUENCE session_datasets_id_seq START -1 INCREMENT BY -1 MINVALUE -2147483647 MAXVALUE -1;
ALTER TABLE datasets ALTER COLUMN id SET DEFAULT nextval('session_datasets_id_seq');
