-- chatgw: compatible with earlier gateways
-- The check of a value a transaction assumed instead of reading it
-- (store.Assumer): it raises SQLSTATE CGW01 unless key in bucket holds value,
-- or is absent when value is NULL. Its read is the transaction's like any
-- other, tracked by serializable isolation.
CREATE OR REPLACE FUNCTION chatgw_expect(b bytea, k bytea, v bytea) RETURNS void
	LANGUAGE plpgsql STABLE
	AS $$
BEGIN
	IF (SELECT value FROM chatgw_kv WHERE bucket = b AND key = k) IS DISTINCT FROM v THEN
		RAISE EXCEPTION 'chatgw: an assumed value changed' USING ERRCODE = 'CGW01';
	END IF;
END
$$;
