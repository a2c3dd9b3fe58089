-- A write of a versioned table also notifies (channel svcd_data_versions, payload: the table, a space and the
-- writer's application_name), delivered at commit: svcd on PostgreSQL keeps its cached reads per version from
-- these instead of reading the counters per request (src/db/data-version-listener.ts); it counts its own
-- writes itself and skips their notifications. Images, aliases and snapshots get counters too.
CREATE OR REPLACE FUNCTION "bump_data_version"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE "data_versions" SET "version" = "version" + 1 WHERE "name" = TG_TABLE_NAME;
	PERFORM pg_notify('svcd_data_versions', TG_TABLE_NAME || ' ' || coalesce(current_setting('application_name', true), ''));
	RETURN NULL;
END
$$;
--> statement-breakpoint
INSERT INTO "data_versions" ("name") VALUES ('images'), ('image_aliases'), ('container_snapshots') ON CONFLICT DO NOTHING;
--> statement-breakpoint
CREATE TRIGGER "images_data_version" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "images" FOR EACH STATEMENT EXECUTE FUNCTION "bump_data_version"();
--> statement-breakpoint
CREATE TRIGGER "image_aliases_data_version" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "image_aliases" FOR EACH STATEMENT EXECUTE FUNCTION "bump_data_version"();
--> statement-breakpoint
CREATE TRIGGER "container_snapshots_data_version" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "container_snapshots" FOR EACH STATEMENT EXECUTE FUNCTION "bump_data_version"();
