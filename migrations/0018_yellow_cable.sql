CREATE TABLE "followed_traders" (
	"wallet_address" text PRIMARY KEY NOT NULL,
	"follower_count" integer DEFAULT 0 NOT NULL,
	"display_name" text,
	"avatar_url" text,
	"seen_until" bigint,
	"polled_at" timestamp with time zone,
	"last_trade_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "follows" (
	"user_id" uuid NOT NULL,
	"wallet_address" text NOT NULL,
	"followed_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "follows_user_id_wallet_address_pk" PRIMARY KEY("user_id","wallet_address")
);
--> statement-breakpoint
CREATE TABLE "trader_fills" (
	"transaction_hash" text NOT NULL,
	"token_id" text NOT NULL,
	"side" text NOT NULL,
	"wallet_address" text NOT NULL,
	"at" timestamp with time zone NOT NULL,
	"seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "trader_fills_wallet_address_transaction_hash_token_id_side_pk" PRIMARY KEY("wallet_address","transaction_hash","token_id","side")
);
--> statement-breakpoint
ALTER TABLE "follows" ADD CONSTRAINT "follows_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "followed_traders_followers_idx" ON "followed_traders" USING btree ("follower_count" DESC NULLS LAST,"wallet_address") WHERE "followed_traders"."follower_count" > 0;--> statement-breakpoint
CREATE INDEX "follows_user_followed_idx" ON "follows" USING btree ("user_id","followed_at" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "follows_wallet_followed_idx" ON "follows" USING btree ("wallet_address","followed_at");--> statement-breakpoint
CREATE INDEX "trader_fills_seen_idx" ON "trader_fills" USING btree ("seen_at");