CREATE TABLE "network_runtime" (
	"node" text NOT NULL,
	"network_id" uuid NOT NULL,
	"ready" boolean DEFAULT false NOT NULL,
	"problem" text DEFAULT '' NOT NULL,
	"observed_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "network_runtime_node_network_id_pk" PRIMARY KEY("node","network_id")
);
--> statement-breakpoint
ALTER TABLE "network_runtime" ADD CONSTRAINT "network_runtime_network_id_networks_id_fk" FOREIGN KEY ("network_id") REFERENCES "public"."networks"("id") ON DELETE cascade ON UPDATE no action;