-- Storage pools and volumes get write counters too (see 0006): the file API caches where a container's root volume is.
INSERT INTO "data_versions" ("name") VALUES ('storage_pools'), ('storage_volumes') ON CONFLICT DO NOTHING;
--> statement-breakpoint
CREATE TRIGGER "storage_pools_data_version" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "storage_pools" FOR EACH STATEMENT EXECUTE FUNCTION "bump_data_version"();
--> statement-breakpoint
CREATE TRIGGER "storage_volumes_data_version" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "storage_volumes" FOR EACH STATEMENT EXECUTE FUNCTION "bump_data_version"();
