DROP INDEX "price_alerts_active_market_idx";--> statement-breakpoint
ALTER TABLE "price_alerts" ALTER COLUMN "target_price" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "price_alerts" ADD COLUMN "change" double precision;--> statement-breakpoint
ALTER TABLE "price_alerts" ADD COLUMN "window_minutes" integer;--> statement-breakpoint
ALTER TABLE "price_alerts" ADD COLUMN "repeat" boolean DEFAULT false NOT NULL;--> statement-breakpoint
ALTER TABLE "price_alerts" ADD COLUMN "cooldown_minutes" integer DEFAULT 60 NOT NULL;--> statement-breakpoint
ALTER TABLE "price_alerts" ADD COLUMN "trigger_count" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "price_alerts" ADD COLUMN "armed" boolean DEFAULT true NOT NULL;--> statement-breakpoint
ALTER TABLE "price_alerts" ADD COLUMN "readings_from" timestamp with time zone DEFAULT now() NOT NULL;--> statement-breakpoint
ALTER TABLE "price_alerts" ADD COLUMN "due_at" timestamp with time zone;--> statement-breakpoint
CREATE INDEX "price_history_market_readings_idx" ON "price_history" USING btree ("market_id","ts","price");--> statement-breakpoint
CREATE INDEX "price_alerts_check_idx" ON "price_alerts" USING btree ("market_id","armed","side","condition","target_price") WHERE "price_alerts"."active";--> statement-breakpoint
CREATE INDEX "price_alerts_moves_idx" ON "price_alerts" USING btree ("market_id","change") WHERE "price_alerts"."active" and "price_alerts"."condition" = 'moves';--> statement-breakpoint
CREATE INDEX "price_alerts_due_idx" ON "price_alerts" USING btree ("due_at") WHERE "price_alerts"."due_at" is not null;