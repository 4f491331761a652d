DROP INDEX "leaderboard_entries_pnl_idx";--> statement-breakpoint
ALTER TABLE "leaderboard_current" ADD COLUMN "version" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "leaderboard_entries" ADD COLUMN "roi" double precision DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "leaderboard_entries" ADD COLUMN "win_rate" double precision DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "leaderboard_entries" ADD COLUMN "wins" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "leaderboard_entries" ADD COLUMN "losses" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "leaderboard_entries" ADD COLUMN "best_trade" double precision DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "leaderboard_entries" ADD COLUMN "sharpe_ratio" double precision DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "leaderboard_entries" ADD COLUMN "trade_count" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "leaderboard_entries" ADD COLUMN "avg_entry" double precision DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "leaderboard_entries" ADD COLUMN "avg_trade" double precision DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "leaderboard_entries" ADD COLUMN "sparkline" jsonb DEFAULT '[]'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "leaderboard_snapshots" ADD COLUMN "skipped_rows" integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "trader_stats" ADD COLUMN "total_pnl" double precision DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE "trader_stats" ADD COLUMN "top_positions" jsonb DEFAULT '[]'::jsonb NOT NULL;--> statement-breakpoint
ALTER TABLE "trader_stats" ADD COLUMN "recent_trades" jsonb DEFAULT '[]'::jsonb NOT NULL;--> statement-breakpoint
CREATE INDEX "biggest_wins_pnl_idx" ON "biggest_wins" USING btree ("pnl" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "leaderboard_entries_pnl_asc_idx" ON "leaderboard_entries" USING btree ("snapshot_id","pnl","wallet_address");--> statement-breakpoint
CREATE INDEX "leaderboard_entries_pnl_desc_idx" ON "leaderboard_entries" USING btree ("snapshot_id",(-"pnl"),"wallet_address");--> statement-breakpoint
CREATE INDEX "leaderboard_entries_volume_asc_idx" ON "leaderboard_entries" USING btree ("snapshot_id","volume","wallet_address");--> statement-breakpoint
CREATE INDEX "leaderboard_entries_volume_desc_idx" ON "leaderboard_entries" USING btree ("snapshot_id",(-"volume"),"wallet_address");--> statement-breakpoint
CREATE INDEX "leaderboard_entries_roi_asc_idx" ON "leaderboard_entries" USING btree ("snapshot_id","roi","wallet_address");--> statement-breakpoint
CREATE INDEX "leaderboard_entries_roi_desc_idx" ON "leaderboard_entries" USING btree ("snapshot_id",(-"roi"),"wallet_address");--> statement-breakpoint
CREATE INDEX "leaderboard_entries_win_rate_asc_idx" ON "leaderboard_entries" USING btree ("snapshot_id","win_rate","wallet_address");--> statement-breakpoint
CREATE INDEX "leaderboard_entries_win_rate_desc_idx" ON "leaderboard_entries" USING btree ("snapshot_id",(-"win_rate"),"wallet_address");--> statement-breakpoint
CREATE INDEX "leaderboard_entries_sharpe_ratio_asc_idx" ON "leaderboard_entries" USING btree ("snapshot_id","sharpe_ratio","wallet_address");--> statement-breakpoint
CREATE INDEX "leaderboard_entries_sharpe_ratio_desc_idx" ON "leaderboard_entries" USING btree ("snapshot_id",(-"sharpe_ratio"),"wallet_address");--> statement-breakpoint
CREATE INDEX "leaderboard_entries_trade_count_asc_idx" ON "leaderboard_entries" USING btree ("snapshot_id","trade_count","wallet_address");--> statement-breakpoint
CREATE INDEX "leaderboard_entries_trade_count_desc_idx" ON "leaderboard_entries" USING btree ("snapshot_id",(-"trade_count"),"wallet_address");--> statement-breakpoint
CREATE INDEX "leaderboard_entries_avg_entry_asc_idx" ON "leaderboard_entries" USING btree ("snapshot_id","avg_entry","wallet_address");--> statement-breakpoint
CREATE INDEX "leaderboard_entries_avg_entry_desc_idx" ON "leaderboard_entries" USING btree ("snapshot_id",(-"avg_entry"),"wallet_address");--> statement-breakpoint
CREATE INDEX "leaderboard_entries_avg_trade_asc_idx" ON "leaderboard_entries" USING btree ("snapshot_id","avg_trade","wallet_address");--> statement-breakpoint
CREATE INDEX "leaderboard_entries_avg_trade_desc_idx" ON "leaderboard_entries" USING btree ("snapshot_id",(-"avg_trade"),"wallet_address");--> statement-breakpoint
CREATE INDEX "trader_stats_enriched_idx" ON "trader_stats" USING btree ("enriched_at");