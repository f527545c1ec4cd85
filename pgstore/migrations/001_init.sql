-- The records, their lookup keys, references and secondary index entries,
-- and the change feed. Integrity is the database's: the keys' uniqueness,
-- a parent in the same account (children go with it), references to
-- records of the same account that cannot be deleted while they stand.

CREATE TABLE records (
	id           text COLLATE "C"   PRIMARY KEY,
	kind         text COLLATE "C"   NOT NULL,
	account_id   text COLLATE "C"   NOT NULL,
	parent_id    text COLLATE "C",
	data         bytea  NOT NULL,
	keys         text[] NOT NULL,
	refs         text[] NOT NULL,
	index_names  text[] NOT NULL,
	index_values text[] NOT NULL,
	version      bigint NOT NULL,
	UNIQUE (id, account_id),
	FOREIGN KEY (parent_id, account_id) REFERENCES records (id, account_id) ON DELETE CASCADE
);
CREATE INDEX records_kind_account ON records (kind, account_id, id);
CREATE INDEX records_kind ON records (kind, id);
CREATE INDEX records_kind_account_parent ON records (kind, account_id, parent_id, id) WHERE parent_id IS NOT NULL;
CREATE INDEX records_kind_parent ON records (kind, parent_id, id) WHERE parent_id IS NOT NULL;
CREATE INDEX records_parent ON records (parent_id, account_id) WHERE parent_id IS NOT NULL;

CREATE TABLE record_keys (
	key       text COLLATE "C" PRIMARY KEY,
	record_id text COLLATE "C" NOT NULL REFERENCES records (id) ON DELETE CASCADE
);
CREATE INDEX record_keys_record ON record_keys (record_id);

CREATE TABLE record_refs (
	target_id  text COLLATE "C" NOT NULL,
	record_id  text COLLATE "C" NOT NULL REFERENCES records (id) ON DELETE CASCADE,
	account_id text COLLATE "C" NOT NULL,
	PRIMARY KEY (target_id, record_id),
	FOREIGN KEY (target_id, account_id) REFERENCES records (id, account_id) ON DELETE RESTRICT
);
CREATE INDEX record_refs_record ON record_refs (record_id);

CREATE TABLE record_index (
	kind       text COLLATE "C" NOT NULL,
	account_id text COLLATE "C" NOT NULL,
	name       text COLLATE "C" NOT NULL,
	value      text COLLATE "C" NOT NULL,
	record_id  text COLLATE "C" NOT NULL REFERENCES records (id) ON DELETE CASCADE,
	PRIMARY KEY (kind, name, value, record_id)
);
CREATE INDEX record_index_account ON record_index (kind, account_id, name, value, record_id);
CREATE INDEX record_index_record ON record_index (record_id);

-- The feed. feed_head's one row is the writers' lock and holds the last
-- committed revision and the compaction floor; revisions come from
-- feed_revision, drawn while holding that lock.
CREATE SEQUENCE feed_revision AS bigint START 1 CACHE 1;

CREATE TABLE feed_head (
	one   boolean PRIMARY KEY DEFAULT true CHECK (one),
	rev   bigint  NOT NULL,
	floor bigint  NOT NULL
);
INSERT INTO feed_head (rev, floor) VALUES (0, 0);

CREATE TABLE changes (
	revision   bigint   PRIMARY KEY,
	op         smallint NOT NULL,
	kind       text COLLATE "C"     NOT NULL,
	account_id text COLLATE "C"     NOT NULL,
	id         text COLLATE "C"     NOT NULL,
	parent_id  text COLLATE "C"     NOT NULL,
	data       bytea    NOT NULL,
	note       text COLLATE "C"     NOT NULL
);
