CREATE TABLE "storage_pools" (
	"name" text PRIMARY KEY NOT NULL,
	"driver" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"config" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"generation" integer DEFAULT 1 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"deleting_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "storage_volumes" (
	"id" uuid PRIMARY KEY NOT NULL,
	"pool" text NOT NULL,
	"project" text DEFAULT 'default' NOT NULL,
	"type" text NOT NULL,
	"name" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"config" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"source" jsonb,
	"restore" jsonb,
	"generation" integer DEFAULT 1 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"deleting_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "volume_snapshots" (
	"id" uuid PRIMARY KEY NOT NULL,
	"volume_id" uuid NOT NULL,
	"name" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"config" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"deleting_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "pool_runtime" (
	"node" text NOT NULL,
	"pool" text NOT NULL,
	"ready" boolean DEFAULT false NOT NULL,
	"problem" text DEFAULT '' NOT NULL,
	"space_used" bigint DEFAULT 0 NOT NULL,
	"space_total" bigint DEFAULT 0 NOT NULL,
	"inodes_used" bigint DEFAULT 0 NOT NULL,
	"inodes_total" bigint DEFAULT 0 NOT NULL,
	"observed_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "pool_runtime_node_pool_pk" PRIMARY KEY("node","pool")
);
--> statement-breakpoint
ALTER TABLE "reconcile_status" ADD COLUMN "facts" jsonb DEFAULT '{}'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "storage_volumes" ADD CONSTRAINT "storage_volumes_pool_storage_pools_name_fk" FOREIGN KEY ("pool") REFERENCES "public"."storage_pools"("name") ON DELETE no action ON UPDATE cascade;--> statement-breakpoint
ALTER TABLE "volume_snapshots" ADD CONSTRAINT "volume_snapshots_volume_id_storage_volumes_id_fk" FOREIGN KEY ("volume_id") REFERENCES "public"."storage_volumes"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "storage_volumes_name_idx" ON "storage_volumes" USING btree ("pool","project","type","name");--> statement-breakpoint
CREATE INDEX "storage_volumes_pool_idx" ON "storage_volumes" USING btree ("pool");--> statement-breakpoint
CREATE UNIQUE INDEX "volume_snapshots_name_idx" ON "volume_snapshots" USING btree ("volume_id","name");