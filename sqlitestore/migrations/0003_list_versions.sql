-- Schema version 3: the indexes that serve lists of one account's
-- records and of a parent's children hold each record's version too (and
-- the parent's, its children's account, which is the parent's), so that a
-- list of IDs and versions (ListVersions) is read from the index alone,
-- without the records' rows (documents included). A write of a
-- record now rewrites its entries in these two indexes (its version
-- changes on every write): a few bytes more in the write's transaction.

CREATE INDEX records_by_account_version ON records (kind, account_id, id, version);
DROP INDEX records_by_account;
CREATE INDEX records_by_parent_version ON records (parent_id, kind, id, version, account_id);
DROP INDEX records_by_parent;
