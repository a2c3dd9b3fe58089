CREATE TABLE "member_status" (
	"node" text NOT NULL,
	"kind" text NOT NULL,
	"key" text NOT NULL,
	"observed_generation" integer DEFAULT 0 NOT NULL,
	"last_error" text DEFAULT '' NOT NULL,
	"terminal" boolean DEFAULT false NOT NULL,
	"facts" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "member_status_kind_key_node_pk" PRIMARY KEY("kind","key","node")
);
