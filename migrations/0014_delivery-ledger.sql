CREATE TABLE "delivery_channels" (
	"channel" text PRIMARY KEY NOT NULL,
	"paused_reason" text,
	"paused_at" timestamp with time zone,
	"credential_hash" text
);
--> statement-breakpoint
ALTER TABLE "notification_deliveries" ADD COLUMN "user_id" uuid;--> statement-breakpoint
ALTER TABLE "notification_deliveries" ADD COLUMN "target_kind" text;--> statement-breakpoint
ALTER TABLE "notification_deliveries" ADD COLUMN "target" text;--> statement-breakpoint
ALTER TABLE "notification_deliveries" ADD COLUMN "deadline_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "push_tickets" ADD COLUMN "delivery_id" uuid;--> statement-breakpoint
CREATE INDEX "notification_deliveries_status_updated_idx" ON "notification_deliveries" USING btree ("status","updated_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "notification_deliveries_pending_target_idx" ON "notification_deliveries" USING btree ("channel","target") WHERE "notification_deliveries"."status" = 'pending';