CREATE TABLE "image_aliases" (
	"project" text NOT NULL,
	"name" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"fingerprint" text NOT NULL,
	CONSTRAINT "image_aliases_project_name_pk" PRIMARY KEY("project","name")
);
--> statement-breakpoint
CREATE TABLE "images" (
	"project" text NOT NULL,
	"fingerprint" text NOT NULL,
	"filename" text DEFAULT '' NOT NULL,
	"size" bigint NOT NULL,
	"architecture" text NOT NULL,
	"type" text DEFAULT 'container' NOT NULL,
	"split" boolean DEFAULT false NOT NULL,
	"public" boolean DEFAULT false NOT NULL,
	"auto_update" boolean DEFAULT false NOT NULL,
	"cached" boolean DEFAULT false NOT NULL,
	"properties" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"update_source" jsonb,
	"created_at" timestamp with time zone NOT NULL,
	"uploaded_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_used_at" timestamp with time zone,
	"expires_at" timestamp with time zone,
	CONSTRAINT "images_project_fingerprint_pk" PRIMARY KEY("project","fingerprint")
);
--> statement-breakpoint
ALTER TABLE "image_aliases" ADD CONSTRAINT "image_aliases_project_fingerprint_images_project_fingerprint_fk" FOREIGN KEY ("project","fingerprint") REFERENCES "public"."images"("project","fingerprint") ON DELETE cascade ON UPDATE cascade;--> statement-breakpoint
ALTER TABLE "images" ADD CONSTRAINT "images_project_projects_name_fk" FOREIGN KEY ("project") REFERENCES "public"."projects"("name") ON DELETE cascade ON UPDATE cascade;--> statement-breakpoint
CREATE INDEX "images_fingerprint_idx" ON "images" USING btree ("fingerprint");