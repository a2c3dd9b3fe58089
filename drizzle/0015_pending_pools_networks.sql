ALTER TABLE "storage_pools" ADD COLUMN "pending" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "networks" ADD COLUMN "pending" boolean DEFAULT false NOT NULL;