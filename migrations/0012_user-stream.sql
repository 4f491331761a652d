CREATE TABLE "user_stream_events" (
	"user_id" uuid NOT NULL,
	"seq" bigint NOT NULL,
	"event" text NOT NULL,
	"payload" json NOT NULL,
	"created_at" timestamp with time zone NOT NULL,
	CONSTRAINT "user_stream_events_user_id_seq_pk" PRIMARY KEY("user_id","seq")
);
--> statement-breakpoint
CREATE TABLE "user_stream_heads" (
	"user_id" uuid PRIMARY KEY NOT NULL,
	"seq" bigint DEFAULT 0 NOT NULL
);
--> statement-breakpoint
ALTER TABLE "user_stream_events" ADD CONSTRAINT "user_stream_events_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
ALTER TABLE "user_stream_heads" ADD CONSTRAINT "user_stream_heads_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;--> statement-breakpoint
CREATE INDEX "user_stream_events_created_idx" ON "user_stream_events" USING btree ("created_at");