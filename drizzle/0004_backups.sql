CREATE TABLE "container_backups" (
	"id" uuid PRIMARY KEY NOT NULL,
	"container_id" uuid NOT NULL,
	"name" text NOT NULL,
	"container_only" boolean DEFAULT false NOT NULL,
	"optimized_storage" boolean DEFAULT false NOT NULL,
	"compression" text DEFAULT 'gzip' NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"expires_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "container_backups" ADD CONSTRAINT "container_backups_container_id_containers_id_fk" FOREIGN KEY ("container_id") REFERENCES "public"."containers"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "container_backups_name_idx" ON "container_backups" USING btree ("container_id","name");