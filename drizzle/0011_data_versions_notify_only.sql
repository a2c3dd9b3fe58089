-- A write of a versioned table now only notifies (see 0009); the data_versions counters go. They served
-- cached reads while notifications could not be trusted (svcd's LISTEN connection lost), and now svcd reads
-- without its caches meanwhile (src/desired/data-versions.ts). Their UPDATE in every writing transaction
-- cost a row write per statement and held its table's counter row locked until the commit: every writer of
-- a table waited for the one before to commit (and, on a server that flushes at commit, to flush).
CREATE OR REPLACE FUNCTION "bump_data_version"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	PERFORM pg_notify('svcd_data_versions', TG_TABLE_NAME || ' ' || coalesce(current_setting('application_name', true), ''));
	RETURN NULL;
END
$$;
--> statement-breakpoint
DROP TABLE "data_versions" CASCADE;
