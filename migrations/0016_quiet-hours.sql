DROP INDEX "notification_deliveries_due_idx";--> statement-breakpoint
ALTER TABLE "notification_deliveries" ALTER COLUMN "notification_id" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "notification_deliveries" ADD COLUMN "held_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "notification_deliveries" ADD COLUMN "digest" jsonb;--> statement-breakpoint
ALTER TABLE "push_preferences" ADD COLUMN "quiet_hours" jsonb;--> statement-breakpoint
ALTER TABLE "push_preferences" ADD COLUMN "urgent_types" jsonb DEFAULT '[]'::jsonb NOT NULL;--> statement-breakpoint
CREATE INDEX "notification_deliveries_held_idx" ON "notification_deliveries" USING btree ("user_id") WHERE "notification_deliveries"."status" = 'pending' and "notification_deliveries"."held_at" is not null;--> statement-breakpoint
CREATE INDEX "notification_deliveries_due_idx" ON "notification_deliveries" USING btree ("next_attempt_at") WHERE "notification_deliveries"."status" = 'pending' and "notification_deliveries"."held_at" is null;