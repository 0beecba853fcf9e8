-- The key space of store.Store: every bucket's keys in one table, ordered by
-- (bucket, key), so that a Get is a primary-key lookup and a prefix Scan a
-- range scan of the primary key's index (kine puts etcd's key space on SQL
-- the same way). bytea compares byte by byte, shorter first on a tie: the
-- order of bytes.Compare, the one Scan promises.
CREATE TABLE IF NOT EXISTS chatgw_kv (
	bucket bytea NOT NULL,
	key    bytea NOT NULL,
	value  bytea NOT NULL,
	PRIMARY KEY (bucket, key)
);
