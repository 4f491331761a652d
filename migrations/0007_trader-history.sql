CREATE TABLE "trader_history_daily" (
	"category" text NOT NULL,
	"period" text NOT NULL,
	"wallet_address" text NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"rank" integer,
	"pnl" double precision NOT NULL,
	"volume" double precision NOT NULL,
	"day" date NOT NULL,
	CONSTRAINT "trader_history_daily_category_period_wallet_address_day_pk" PRIMARY KEY("category","period","wallet_address","day")
);
--> statement-breakpoint
CREATE TABLE "trader_history_hourly" (
	"category" text NOT NULL,
	"period" text NOT NULL,
	"wallet_address" text NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"rank" integer,
	"pnl" double precision NOT NULL,
	"volume" double precision NOT NULL,
	"hour" timestamp with time zone NOT NULL,
	CONSTRAINT "trader_history_hourly_category_period_wallet_address_hour_pk" PRIMARY KEY("category","period","wallet_address","hour")
);
--> statement-breakpoint
ALTER TABLE "leaderboard_entries" ADD COLUMN "rank_change" integer;--> statement-breakpoint
CREATE INDEX "trader_history_daily_day_idx" ON "trader_history_daily" USING btree ("day");--> statement-breakpoint
CREATE INDEX "trader_history_hourly_hour_idx" ON "trader_history_hourly" USING btree ("hour");