CREATE TABLE "data_versions" (
	"name" text PRIMARY KEY NOT NULL,
	"version" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
INSERT INTO "data_versions" ("name") VALUES ('containers'), ('container_runtime'), ('profiles'), ('projects');
--> statement-breakpoint
CREATE FUNCTION "bump_data_version"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	UPDATE "data_versions" SET "version" = "version" + 1 WHERE "name" = TG_TABLE_NAME;
	RETURN NULL;
END
$$;
--> statement-breakpoint
CREATE TRIGGER "containers_data_version" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "containers" FOR EACH STATEMENT EXECUTE FUNCTION "bump_data_version"();
--> statement-breakpoint
CREATE TRIGGER "container_runtime_data_version" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "container_runtime" FOR EACH STATEMENT EXECUTE FUNCTION "bump_data_version"();
--> statement-breakpoint
CREATE TRIGGER "profiles_data_version" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "profiles" FOR EACH STATEMENT EXECUTE FUNCTION "bump_data_version"();
--> statement-breakpoint
CREATE TRIGGER "projects_data_version" AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON "projects" FOR EACH STATEMENT EXECUTE FUNCTION "bump_data_version"();
