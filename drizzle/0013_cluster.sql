-- Clusters on one database: a row per member daemon, the member holding each container and volume, and
-- member-specific pool keys. Rows written before are adopted by the first member (src/cluster/members.ts).
CREATE TABLE "cluster_members" (
	"name" text PRIMARY KEY NOT NULL,
	"address" text DEFAULT '' NOT NULL,
	"clustered" boolean DEFAULT false NOT NULL,
	"roles" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"architecture" text DEFAULT '' NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"heartbeat_at" timestamp with time zone DEFAULT now() NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "storage_pools" ADD COLUMN "member_config" jsonb DEFAULT '{}'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "storage_volumes" ADD COLUMN "location" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "containers" ADD COLUMN "location" text DEFAULT '' NOT NULL;--> statement-breakpoint
CREATE INDEX "containers_location_idx" ON "containers" USING btree ("location");