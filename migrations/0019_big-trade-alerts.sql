ALTER TABLE "price_alerts" ALTER COLUMN "side" DROP NOT NULL;--> statement-breakpoint
ALTER TABLE "markets" ADD COLUMN "condition_id" text;--> statement-breakpoint
ALTER TABLE "price_alerts" ADD COLUMN "min_usd" double precision;--> statement-breakpoint
ALTER TABLE "price_alerts" ADD COLUMN "pending_trade" jsonb;--> statement-breakpoint
ALTER TABLE "price_alerts" ADD COLUMN "trades_seen_until" timestamp with time zone;--> statement-breakpoint
CREATE INDEX "markets_condition_idx" ON "markets" USING btree ("condition_id") WHERE "markets"."condition_id" is not null;--> statement-breakpoint
CREATE INDEX "price_alerts_big_trade_idx" ON "price_alerts" USING btree ("market_id","min_usd") WHERE "price_alerts"."active" and "price_alerts"."condition" = 'big_trade';