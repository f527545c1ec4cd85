-- Schema version 1 of sqlitestore. Migrations are applied in file-name
-- order at Open, each in the transaction that sets PRAGMA user_version to
-- its number; never edit a released file, add the next one.

-- meta is the one row of store-wide counters: revision is the revision of
-- the last committed change; floor, the revision through which the change
-- feed is compacted.
CREATE TABLE meta (
	one      INTEGER PRIMARY KEY CHECK (one = 1),
	revision INTEGER NOT NULL CHECK (revision >= 0),
	floor    INTEGER NOT NULL CHECK (floor >= 0 AND floor <= revision)
);
INSERT INTO meta (one, revision, floor) VALUES (1, 0, 0);

-- records holds one row per record. keys, refs and idx repeat the
-- record's lookup keys, references and index entries as JSON, in the order
-- the writer gave them, so a read is one row; the tables below hold the
-- same facts relationally, where the constraints can guard them.
CREATE TABLE records (
	id         TEXT PRIMARY KEY NOT NULL,
	kind       TEXT NOT NULL,
	account_id TEXT NOT NULL,
	parent_id  TEXT,
	data       BLOB NOT NULL,
	keys       TEXT NOT NULL,
	refs       TEXT NOT NULL,
	idx        TEXT NOT NULL,
	version    INTEGER NOT NULL,
	UNIQUE (account_id, id),
	-- A parent is a record of the same account; deleting it deletes its
	-- children (sqlitestore writes their changes first).
	FOREIGN KEY (account_id, parent_id) REFERENCES records (account_id, id) ON DELETE CASCADE
) WITHOUT ROWID;
CREATE INDEX records_by_account ON records (kind, account_id, id);
CREATE INDEX records_by_kind ON records (kind, id);
CREATE INDEX records_by_parent ON records (parent_id, kind, id);

-- keys are the lookup keys, unique across the store.
CREATE TABLE keys (
	key TEXT PRIMARY KEY NOT NULL,
	id  TEXT NOT NULL REFERENCES records (id) ON DELETE CASCADE
) WITHOUT ROWID;
CREATE INDEX keys_by_record ON keys (id);

-- refs are the references between records of one account: a referenced
-- record cannot be deleted while a reference stands (RESTRICT), and a
-- referrer's references go with it (CASCADE). A record's references to
-- itself are not kept here.
CREATE TABLE refs (
	to_id      TEXT NOT NULL,
	from_id    TEXT NOT NULL REFERENCES records (id) ON DELETE CASCADE,
	account_id TEXT NOT NULL,
	PRIMARY KEY (to_id, from_id),
	FOREIGN KEY (account_id, to_id) REFERENCES records (account_id, id) ON DELETE RESTRICT
) WITHOUT ROWID;
CREATE INDEX refs_by_referrer ON refs (from_id);

-- idx holds the secondary index entries, one row per distinct
-- (record, name, value); kind and account repeat the record's, which
-- never change.
CREATE TABLE idx (
	id         TEXT NOT NULL REFERENCES records (id) ON DELETE CASCADE,
	name       TEXT NOT NULL,
	value      TEXT NOT NULL,
	kind       TEXT NOT NULL,
	account_id TEXT NOT NULL,
	PRIMARY KEY (id, name, value)
) WITHOUT ROWID;
CREATE INDEX idx_by_account ON idx (kind, account_id, name, value, id);
CREATE INDEX idx_by_kind ON idx (kind, name, value, id);

-- feed is the change feed: one row per change, written in the
-- transaction of the change.
CREATE TABLE feed (
	revision   INTEGER PRIMARY KEY,
	op         INTEGER NOT NULL CHECK (op BETWEEN 1 AND 3),
	kind       TEXT NOT NULL,
	account_id TEXT NOT NULL,
	id         TEXT NOT NULL,
	parent_id  TEXT NOT NULL,
	data       BLOB NOT NULL,
	note       TEXT NOT NULL
);
