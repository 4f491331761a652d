DROP INDEX "event_groups_list_idx";--> statement-breakpoint
DROP INDEX "event_groups_status_cat_idx";--> statement-breakpoint
DROP INDEX "event_groups_category_idx";--> statement-breakpoint
ALTER TABLE "event_groups" ADD COLUMN "end_date" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "event_groups" ADD COLUMN "venue_created_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "event_groups" ADD COLUMN "change_24h" double precision;--> statement-breakpoint
ALTER TABLE "event_groups" ADD COLUMN "search_title" "tsvector";--> statement-breakpoint
ALTER TABLE "event_groups" ADD COLUMN "search_all" "tsvector";--> statement-breakpoint
ALTER TABLE "markets" ADD COLUMN "search_text" text DEFAULT '' NOT NULL;--> statement-breakpoint
ALTER TABLE "markets" ADD COLUMN "read_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "markets" ADD COLUMN "end_date" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "markets" ADD COLUMN "venue_change_24h" double precision;--> statement-breakpoint
CREATE INDEX "event_groups_sort_volume_24h_idx" ON "event_groups" USING btree ("volume_24h" DESC NULLS LAST,"id" collate "C");--> statement-breakpoint
CREATE INDEX "event_groups_sort_newest_idx" ON "event_groups" USING btree ("venue_created_at" DESC NULLS LAST,"id" collate "C");--> statement-breakpoint
CREATE INDEX "event_groups_sort_closing_idx" ON "event_groups" USING btree ("end_date","id" collate "C");--> statement-breakpoint
CREATE INDEX "event_groups_search_idx" ON "event_groups" USING gin ("search_all");--> statement-breakpoint
CREATE INDEX "event_groups_sort_movers_idx" ON "event_groups" USING btree (abs("change_24h") desc nulls last,"id" collate "C");--> statement-breakpoint
CREATE INDEX "markets_read_idx" ON "markets" USING btree ("read_at") WHERE "markets"."read_at" is not null;--> statement-breakpoint
CREATE INDEX "event_groups_list_idx" ON "event_groups" USING btree ("total_volume" DESC NULLS LAST,"id" collate "C");--> statement-breakpoint
CREATE INDEX "event_groups_status_cat_idx" ON "event_groups" USING btree ("status","category","total_volume" DESC NULLS LAST,"id" collate "C");--> statement-breakpoint
CREATE INDEX "event_groups_category_idx" ON "event_groups" USING btree ("category","total_volume" DESC NULLS LAST,"id" collate "C");