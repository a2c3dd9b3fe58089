CREATE TABLE "projects" (
	"name" text PRIMARY KEY NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"config" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"generation" integer DEFAULT 1 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "profiles" (
	"project" text NOT NULL,
	"name" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"config" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"devices" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"generation" integer DEFAULT 1 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "profiles_project_name_pk" PRIMARY KEY("project","name")
);
--> statement-breakpoint
CREATE TABLE "certificates" (
	"fingerprint" text PRIMARY KEY NOT NULL,
	"type" text DEFAULT 'client' NOT NULL,
	"name" text DEFAULT '' NOT NULL,
	"certificate" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "server_config" (
	"node" text DEFAULT '' NOT NULL,
	"key" text NOT NULL,
	"value" text NOT NULL,
	CONSTRAINT "server_config_node_key_pk" PRIMARY KEY("node","key")
);
--> statement-breakpoint
CREATE TABLE "operations" (
	"id" uuid PRIMARY KEY NOT NULL,
	"class" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"status_code" integer NOT NULL,
	"resources" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"metadata" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"may_cancel" boolean DEFAULT false NOT NULL,
	"err" text DEFAULT '' NOT NULL,
	"project" text DEFAULT 'default' NOT NULL,
	"node" text NOT NULL,
	"target_kind" text,
	"target_key" text,
	"target_generation" integer,
	"deadline_at" timestamp with time zone,
	"created_at" timestamp with time zone NOT NULL,
	"updated_at" timestamp with time zone NOT NULL
);
--> statement-breakpoint
CREATE TABLE "reconcile_status" (
	"kind" text NOT NULL,
	"key" text NOT NULL,
	"observed_generation" integer DEFAULT 0 NOT NULL,
	"last_error" text DEFAULT '' NOT NULL,
	"terminal" boolean DEFAULT false NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "reconcile_status_kind_key_pk" PRIMARY KEY("kind","key")
);
--> statement-breakpoint
ALTER TABLE "profiles" ADD CONSTRAINT "profiles_project_projects_name_fk" FOREIGN KEY ("project") REFERENCES "public"."projects"("name") ON DELETE cascade ON UPDATE cascade;--> statement-breakpoint
CREATE INDEX "operations_target_idx" ON "operations" USING btree ("target_kind","target_key");--> statement-breakpoint
CREATE INDEX "operations_status_idx" ON "operations" USING btree ("status_code");