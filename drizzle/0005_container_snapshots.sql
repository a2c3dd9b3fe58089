CREATE TABLE "container_snapshots" (
	"id" uuid PRIMARY KEY NOT NULL,
	"container_id" uuid NOT NULL,
	"name" text NOT NULL,
	"architecture" text NOT NULL,
	"ephemeral" boolean DEFAULT false NOT NULL,
	"profiles" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"config" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"devices" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"deleting_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "containers" ADD COLUMN "restore" jsonb;--> statement-breakpoint
ALTER TABLE "container_snapshots" ADD CONSTRAINT "container_snapshots_container_id_containers_id_fk" FOREIGN KEY ("container_id") REFERENCES "public"."containers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "container_snapshots_name_idx" ON "container_snapshots" USING btree ("container_id","name");