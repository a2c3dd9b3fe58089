CREATE TABLE "container_runtime" (
	"id" uuid PRIMARY KEY NOT NULL,
	"node" text NOT NULL,
	"state" text NOT NULL,
	"pid" integer DEFAULT 0 NOT NULL,
	"started_at" timestamp with time zone,
	"processes" integer DEFAULT 0 NOT NULL,
	"cpu_ns" bigint DEFAULT 0 NOT NULL,
	"memory" bigint DEFAULT 0 NOT NULL,
	"observed_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "containers" (
	"id" uuid PRIMARY KEY NOT NULL,
	"project" text NOT NULL,
	"name" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"architecture" text NOT NULL,
	"ephemeral" boolean DEFAULT false NOT NULL,
	"profiles" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"config" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"devices" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"source" jsonb NOT NULL,
	"power" text DEFAULT 'stopped' NOT NULL,
	"power_request" jsonb,
	"idmap_index" integer DEFAULT 0 NOT NULL,
	"generation" integer DEFAULT 1 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_used_at" timestamp with time zone,
	"deleting_at" timestamp with time zone
);
--> statement-breakpoint
ALTER TABLE "containers" ADD CONSTRAINT "containers_project_projects_name_fk" FOREIGN KEY ("project") REFERENCES "public"."projects"("name") ON DELETE no action ON UPDATE cascade;--> statement-breakpoint
CREATE UNIQUE INDEX "containers_name_idx" ON "containers" USING btree ("project","name");--> statement-breakpoint
CREATE INDEX "containers_project_idx" ON "containers" USING btree ("project");