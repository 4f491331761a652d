CREATE TABLE "price_readings" (
	"market_id" text NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"price" double precision NOT NULL
);
--> statement-breakpoint
CREATE TABLE "watch_notices" (
	"user_id" uuid NOT NULL,
	"type" text NOT NULL,
	"subject" text NOT NULL,
	"at" timestamp with time zone NOT NULL,
	CONSTRAINT "watch_notices_user_id_type_subject_pk" PRIMARY KEY("user_id","type","subject")
);
--> statement-breakpoint
CREATE TABLE "watchlist" (
	"user_id" uuid NOT NULL,
	"event_group_id" text NOT NULL,
	"watched_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "watchlist_user_id_event_group_id_pk" PRIMARY KEY("user_id","event_group_id")
);
--> statement-breakpoint
ALTER TABLE "markets" ADD COLUMN "resolved_at" timestamp with time zone;--> statement-breakpoint
ALTER TABLE "markets" ADD COLUMN "result" text;--> statement-breakpoint
ALTER TABLE "markets" ADD COLUMN "resolved_outcome" text;--> statement-breakpoint
ALTER TABLE "price_readings" ADD CONSTRAINT "price_readings_market_id_markets_id_fk" FOREIGN KEY ("market_id") REFERENCES "public"."markets"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "watch_notices" ADD CONSTRAINT "watch_notices_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "watchlist" ADD CONSTRAINT "watchlist_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "watchlist" ADD CONSTRAINT "watchlist_event_group_id_event_groups_id_fk" FOREIGN KEY ("event_group_id") REFERENCES "public"."event_groups"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "price_readings_market_at_idx" ON "price_readings" USING btree ("market_id","at","price");--> statement-breakpoint
CREATE INDEX "price_readings_at_idx" ON "price_readings" USING btree ("at");--> statement-breakpoint
CREATE INDEX "watchlist_group_idx" ON "watchlist" USING btree ("event_group_id","watched_at");--> statement-breakpoint
CREATE INDEX "watchlist_user_watched_idx" ON "watchlist" USING btree ("user_id","watched_at" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "markets_resolved_at_idx" ON "markets" USING btree ("resolved_at") WHERE "markets"."resolved_at" is not null;--> statement-breakpoint
CREATE INDEX "markets_created_idx" ON "markets" USING btree ("created_at");