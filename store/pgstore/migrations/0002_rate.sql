-- The per-token rate limit shared by every gateway on the database: one row a
-- bearer token (its SHA-256), holding the GCRA "theoretical arrival time" in
-- microseconds of the database's clock, so that the replicas' own clocks do not
-- matter. passed and seen are the outcome of the row's last request, for
-- RETURNING (which shows the new row only).
--
-- UNLOGGED: a request writes its row, and this state is worth no WAL. A crash
-- of the database empties the table, which refills every bucket, as a restart
-- of a single gateway does; a clean restart keeps it.
CREATE UNLOGGED TABLE IF NOT EXISTS chatgw_rate (
	digest bytea   PRIMARY KEY,
	tat    bigint  NOT NULL,
	passed boolean NOT NULL,
	seen   bigint  NOT NULL
);

-- The database's clock in microseconds since 1970.
CREATE OR REPLACE FUNCTION chatgw_rate_now() RETURNS bigint
	LANGUAGE sql VOLATILE
	AS 'SELECT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint';

-- Where a bucket's next request starts from: not before now (an idle bucket
-- is full), and not more than tau ahead (a burst lowered since carries over at
-- most the new burst's worth of used requests).
CREATE OR REPLACE FUNCTION chatgw_rate_start(tat bigint, now bigint, tau bigint) RETURNS bigint
	LANGUAGE sql IMMUTABLE
	AS 'SELECT greatest(least(tat, now + tau), now)';
