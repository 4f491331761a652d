CREATE TABLE "trader_period_stats" (
	"wallet_address" text NOT NULL,
	"period" text NOT NULL,
	"total_pnl" double precision DEFAULT 0 NOT NULL,
	"roi" double precision DEFAULT 0 NOT NULL,
	"win_rate" double precision DEFAULT 0 NOT NULL,
	"wins" integer DEFAULT 0 NOT NULL,
	"losses" integer DEFAULT 0 NOT NULL,
	"best_trade" double precision DEFAULT 0 NOT NULL,
	"sharpe_ratio" double precision DEFAULT 0 NOT NULL,
	"trade_count" integer DEFAULT 0 NOT NULL,
	"avg_entry" double precision DEFAULT 0 NOT NULL,
	"avg_trade" double precision DEFAULT 0 NOT NULL,
	"sparkline" jsonb DEFAULT '[]'::jsonb NOT NULL,
	"enriched_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "trader_period_stats_wallet_address_period_pk" PRIMARY KEY("wallet_address","period")
);
--> statement-breakpoint
ALTER TABLE "trader_stats" DROP COLUMN "total_pnl";--> statement-breakpoint
ALTER TABLE "trader_stats" DROP COLUMN "roi";--> statement-breakpoint
ALTER TABLE "trader_stats" DROP COLUMN "win_rate";--> statement-breakpoint
ALTER TABLE "trader_stats" DROP COLUMN "wins";--> statement-breakpoint
ALTER TABLE "trader_stats" DROP COLUMN "losses";--> statement-breakpoint
ALTER TABLE "trader_stats" DROP COLUMN "best_trade";--> statement-breakpoint
ALTER TABLE "trader_stats" DROP COLUMN "sharpe_ratio";--> statement-breakpoint
ALTER TABLE "trader_stats" DROP COLUMN "trade_count";--> statement-breakpoint
ALTER TABLE "trader_stats" DROP COLUMN "avg_entry";--> statement-breakpoint
ALTER TABLE "trader_stats" DROP COLUMN "avg_trade";--> statement-breakpoint
ALTER TABLE "trader_stats" DROP COLUMN "sparkline";