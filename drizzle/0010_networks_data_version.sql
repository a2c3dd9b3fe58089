-- Networks get a write counter too (see 0006 and 0009): the network observer (each second) and the
-- containers' nic checks read the networks again only after a write of them, on PostgreSQL as on the
-- embedded database.
INSERT INTO "data_versions" ("name") VALUES ('networks') ON CONFLICT DO NOTHING;
--> statement-breakpoint
CREATE TRIGGER "networks_data_version" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "networks" FOR EACH STATEMENT EXECUTE FUNCTION "bump_data_version"();
