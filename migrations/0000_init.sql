CREATE TABLE "users" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"chain" text NOT NULL,
	"wallet_address" text NOT NULL,
	"auth_method" text NOT NULL,
	"idp_issuer" text,
	"idp_subject" text,
	"username" text,
	"avatar_url" text,
	"referral_code" text,
	"beta_access" boolean DEFAULT false NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_login_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "beta_key_redemptions" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"key_id" uuid NOT NULL,
	"user_id" uuid,
	"redeemed_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "beta_keys" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"key_hash" text NOT NULL,
	"max_uses" integer DEFAULT 1 NOT NULL,
	"uses" integer DEFAULT 0 NOT NULL,
	"revoked_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "beta_keys_key_hash_unique" UNIQUE("key_hash")
);
--> statement-breakpoint
CREATE TABLE "refresh_tokens" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"user_id" uuid NOT NULL,
	"token_hash" text NOT NULL,
	"family" uuid NOT NULL,
	"used_at" timestamp with time zone,
	"revoked_at" timestamp with time zone,
	"expires_at" timestamp with time zone NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "refresh_tokens_token_hash_unique" UNIQUE("token_hash")
);
--> statement-breakpoint
CREATE TABLE "messenger_bindings" (
	"messenger_id" bigint PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"chat_id" bigint NOT NULL,
	"wallet_type" text DEFAULT 'connected' NOT NULL,
	"connected_at" timestamp with time zone,
	"last_command_at" timestamp with time zone,
	CONSTRAINT "messenger_bindings_user_id_unique" UNIQUE("user_id")
);
--> statement-breakpoint
CREATE TABLE "messenger_link_codes" (
	"code_hash" text PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"expires_at" timestamp with time zone NOT NULL,
	"used_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "messenger_updates" (
	"update_id" bigint PRIMARY KEY NOT NULL,
	"received_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "notification_deliveries" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"notification_id" uuid NOT NULL,
	"channel" text NOT NULL,
	"status" text DEFAULT 'pending' NOT NULL,
	"attempts" integer DEFAULT 0 NOT NULL,
	"next_attempt_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_error" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "notifications" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"user_id" uuid NOT NULL,
	"type" text NOT NULL,
	"title" text NOT NULL,
	"message" text NOT NULL,
	"read" boolean DEFAULT false NOT NULL,
	"data" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "event_groups" (
	"id" text PRIMARY KEY NOT NULL,
	"venue" text NOT NULL,
	"venue_event_id" text NOT NULL,
	"slug" text NOT NULL,
	"title" text NOT NULL,
	"description" text DEFAULT '' NOT NULL,
	"category" text DEFAULT 'OTHER' NOT NULL,
	"status" text DEFAULT 'active' NOT NULL,
	"image_url" text,
	"total_volume" double precision DEFAULT 0 NOT NULL,
	"market_count" integer DEFAULT 0 NOT NULL,
	"series_ticker" text,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL,
	"last_seen_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "event_groups_slug_unique" UNIQUE("slug")
);
--> statement-breakpoint
CREATE TABLE "markets" (
	"id" text PRIMARY KEY NOT NULL,
	"event_group_id" text NOT NULL,
	"venue" text NOT NULL,
	"venue_market_id" text NOT NULL,
	"title" text NOT NULL,
	"yes_price" double precision,
	"volume" double precision DEFAULT 0 NOT NULL,
	"status" text DEFAULT 'active' NOT NULL,
	"yes_token_id" text,
	"price_updated_at" timestamp with time zone,
	"history_backfilled_at" timestamp with time zone,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "price_history" (
	"market_id" text NOT NULL,
	"ts" timestamp with time zone NOT NULL,
	"price" double precision NOT NULL,
	CONSTRAINT "price_history_market_id_ts_pk" PRIMARY KEY("market_id","ts")
);
--> statement-breakpoint
CREATE TABLE "price_alerts" (
	"id" uuid PRIMARY KEY DEFAULT gen_random_uuid() NOT NULL,
	"user_id" uuid NOT NULL,
	"market_id" text NOT NULL,
	"target_price" double precision NOT NULL,
	"condition" text NOT NULL,
	"side" text NOT NULL,
	"active" boolean DEFAULT true NOT NULL,
	"triggered_at" timestamp with time zone,
	"triggered_price" double precision,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "push_devices" (
	"token" text PRIMARY KEY NOT NULL,
	"user_id" uuid NOT NULL,
	"platform" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "push_preferences" (
	"user_id" uuid PRIMARY KEY NOT NULL,
	"enabled" boolean DEFAULT true NOT NULL,
	"types" jsonb DEFAULT '{}'::jsonb NOT NULL,
	"updated_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "push_tickets" (
	"id" text PRIMARY KEY NOT NULL,
	"token" text NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "biggest_wins" (
	"wallet_address" text NOT NULL,
	"asset" text NOT NULL,
	"display_name" text NOT NULL,
	"market_title" text NOT NULL,
	"pnl" double precision NOT NULL,
	"side" text NOT NULL,
	"entry_price" double precision NOT NULL,
	"exit_price" double precision NOT NULL,
	"resolved_at" timestamp with time zone NOT NULL,
	CONSTRAINT "biggest_wins_wallet_address_asset_pk" PRIMARY KEY("wallet_address","asset")
);
--> statement-breakpoint
CREATE TABLE "leaderboard_current" (
	"category" text NOT NULL,
	"period" text NOT NULL,
	"snapshot_id" bigint NOT NULL,
	"switched_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "leaderboard_current_category_period_pk" PRIMARY KEY("category","period")
);
--> statement-breakpoint
CREATE TABLE "leaderboard_entries" (
	"snapshot_id" bigint NOT NULL,
	"wallet_address" text NOT NULL,
	"display_name" text NOT NULL,
	"avatar_url" text,
	"is_kol" boolean DEFAULT false NOT NULL,
	"pnl" double precision DEFAULT 0 NOT NULL,
	"volume" double precision DEFAULT 0 NOT NULL,
	"venue_rank" integer,
	CONSTRAINT "leaderboard_entries_snapshot_id_wallet_address_pk" PRIMARY KEY("snapshot_id","wallet_address")
);
--> statement-breakpoint
CREATE TABLE "leaderboard_snapshots" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"category" text NOT NULL,
	"period" text NOT NULL,
	"status" text DEFAULT 'building' NOT NULL,
	"row_count" integer DEFAULT 0 NOT NULL,
	"created_at" timestamp with time zone DEFAULT now() NOT NULL,
	"completed_at" timestamp with time zone
);
--> statement-breakpoint
CREATE TABLE "trader_profiles" (
	"wallet_address" text NOT NULL,
	"period" text NOT NULL,
	"profile" jsonb NOT NULL,
	"fetched_at" timestamp with time zone DEFAULT now() NOT NULL,
	CONSTRAINT "trader_profiles_wallet_address_period_pk" PRIMARY KEY("wallet_address","period")
);
--> statement-breakpoint
CREATE TABLE "trader_stats" (
	"wallet_address" text PRIMARY KEY NOT NULL,
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
	"enriched_at" timestamp with time zone DEFAULT now() NOT NULL
);
--> statement-breakpoint
CREATE TABLE "job_runs" (
	"id" bigserial PRIMARY KEY NOT NULL,
	"name" text NOT NULL,
	"instance_id" text NOT NULL,
	"started_at" timestamp with time zone NOT NULL,
	"finished_at" timestamp with time zone,
	"ok" boolean,
	"items" integer DEFAULT 0 NOT NULL,
	"error" text
);
--> statement-breakpoint
ALTER TABLE "beta_key_redemptions" ADD CONSTRAINT "beta_key_redemptions_key_id_beta_keys_id_fk" FOREIGN KEY ("key_id") REFERENCES "public"."beta_keys"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "beta_key_redemptions" ADD CONSTRAINT "beta_key_redemptions_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE set null ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "refresh_tokens" ADD CONSTRAINT "refresh_tokens_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "messenger_bindings" ADD CONSTRAINT "messenger_bindings_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "messenger_link_codes" ADD CONSTRAINT "messenger_link_codes_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notification_deliveries" ADD CONSTRAINT "notification_deliveries_notification_id_notifications_id_fk" FOREIGN KEY ("notification_id") REFERENCES "public"."notifications"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "notifications" ADD CONSTRAINT "notifications_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "markets" ADD CONSTRAINT "markets_event_group_id_event_groups_id_fk" FOREIGN KEY ("event_group_id") REFERENCES "public"."event_groups"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "price_history" ADD CONSTRAINT "price_history_market_id_markets_id_fk" FOREIGN KEY ("market_id") REFERENCES "public"."markets"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "price_alerts" ADD CONSTRAINT "price_alerts_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "price_alerts" ADD CONSTRAINT "price_alerts_market_id_markets_id_fk" FOREIGN KEY ("market_id") REFERENCES "public"."markets"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "push_devices" ADD CONSTRAINT "push_devices_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "push_preferences" ADD CONSTRAINT "push_preferences_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "leaderboard_current" ADD CONSTRAINT "leaderboard_current_snapshot_id_leaderboard_snapshots_id_fk" FOREIGN KEY ("snapshot_id") REFERENCES "public"."leaderboard_snapshots"("id") ON DELETE no action ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "leaderboard_entries" ADD CONSTRAINT "leaderboard_entries_snapshot_id_leaderboard_snapshots_id_fk" FOREIGN KEY ("snapshot_id") REFERENCES "public"."leaderboard_snapshots"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE UNIQUE INDEX "users_chain_wallet_uq" ON "users" USING btree ("chain","wallet_address");--> statement-breakpoint
CREATE UNIQUE INDEX "users_idp_uq" ON "users" USING btree ("idp_issuer","idp_subject") WHERE "users"."idp_issuer" is not null;--> statement-breakpoint
CREATE INDEX "users_created_idx" ON "users" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "beta_key_redemptions_key_idx" ON "beta_key_redemptions" USING btree ("key_id");--> statement-breakpoint
CREATE INDEX "refresh_tokens_family_idx" ON "refresh_tokens" USING btree ("family");--> statement-breakpoint
CREATE INDEX "refresh_tokens_user_active_idx" ON "refresh_tokens" USING btree ("user_id") WHERE "refresh_tokens"."revoked_at" is null;--> statement-breakpoint
CREATE INDEX "refresh_tokens_expires_idx" ON "refresh_tokens" USING btree ("expires_at");--> statement-breakpoint
CREATE INDEX "messenger_link_codes_user_idx" ON "messenger_link_codes" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "messenger_updates_received_idx" ON "messenger_updates" USING btree ("received_at");--> statement-breakpoint
CREATE INDEX "notification_deliveries_due_idx" ON "notification_deliveries" USING btree ("next_attempt_at") WHERE "notification_deliveries"."status" = 'pending';--> statement-breakpoint
CREATE INDEX "notifications_user_created_idx" ON "notifications" USING btree ("user_id","created_at" DESC NULLS LAST,"id" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "notifications_user_unread_idx" ON "notifications" USING btree ("user_id") WHERE "notifications"."read" = false;--> statement-breakpoint
CREATE INDEX "event_groups_list_idx" ON "event_groups" USING btree ("total_volume" DESC NULLS LAST,"id");--> statement-breakpoint
CREATE INDEX "event_groups_status_cat_idx" ON "event_groups" USING btree ("status","category","total_volume" DESC NULLS LAST,"id");--> statement-breakpoint
CREATE INDEX "markets_group_volume_idx" ON "markets" USING btree ("event_group_id","volume" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "markets_active_idx" ON "markets" USING btree ("venue") WHERE "markets"."status" = 'active';--> statement-breakpoint
CREATE INDEX "price_alerts_user_idx" ON "price_alerts" USING btree ("user_id","created_at");--> statement-breakpoint
CREATE INDEX "price_alerts_active_market_idx" ON "price_alerts" USING btree ("market_id","side","condition","target_price") WHERE "price_alerts"."active";--> statement-breakpoint
CREATE INDEX "push_devices_user_idx" ON "push_devices" USING btree ("user_id");--> statement-breakpoint
CREATE INDEX "push_tickets_created_idx" ON "push_tickets" USING btree ("created_at");--> statement-breakpoint
CREATE INDEX "biggest_wins_resolved_pnl_idx" ON "biggest_wins" USING btree ("resolved_at","pnl" DESC NULLS LAST);--> statement-breakpoint
CREATE INDEX "leaderboard_entries_pnl_idx" ON "leaderboard_entries" USING btree ("snapshot_id","pnl" DESC NULLS LAST,"wallet_address");--> statement-breakpoint
CREATE INDEX "leaderboard_snapshots_cp_idx" ON "leaderboard_snapshots" USING btree ("category","period","created_at");--> statement-breakpoint
CREATE INDEX "trader_profiles_fetched_idx" ON "trader_profiles" USING btree ("fetched_at");--> statement-breakpoint
CREATE INDEX "job_runs_name_started_idx" ON "job_runs" USING btree ("name","started_at" DESC NULLS LAST);