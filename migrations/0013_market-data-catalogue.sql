CREATE TABLE "kalshi_series" (
	"ticker" text PRIMARY KEY NOT NULL,
	"category" text NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "venue_sync_state" (
	"venue" text PRIMARY KEY NOT NULL,
	"watermark" timestamp with time zone,
	"full_listed_at" timestamp with time zone,
	"catalogue_ok_at" timestamp with time zone,
	"catalogue_failed" boolean DEFAULT false NOT NULL,
	"prices_failed" boolean DEFAULT false NOT NULL,
	"series_at" timestamp with time zone,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
ALTER TABLE "event_groups" ADD COLUMN "volume_24h" double precision DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "event_groups" ADD COLUMN "read_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "markets" ADD COLUMN "outcome" text DEFAULT 'Yes' NOT NULL;--> statement-breakpoint
ALTER TABLE "markets" ADD COLUMN "volume_24h" double precision DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "markets" ADD COLUMN "tracked_at" timestamp with time zone;--> statement-breakpoint
CREATE INDEX "event_groups_volume_24h_idx" ON "event_groups" USING btree ("volume_24h" DESC NULLS LAST) WHERE "event_groups"."status" = 'active';--> statement-breakpoint
CREATE INDEX "event_groups_read_idx" ON "event_groups" USING btree ("read_at") WHERE "event_groups"."read_at" is not null;--> statement-breakpoint
CREATE INDEX "event_groups_venue_seen_idx" ON "event_groups" USING btree ("venue","last_seen_at") WHERE "event_groups"."status" = 'active';