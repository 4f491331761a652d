CREATE TABLE "notification_counters" (
	"user_id" uuid PRIMARY KEY NOT NULL,
	"unread" integer DEFAULT 0 NOT NULL
);
--> statement-breakpoint
ALTER TABLE "notification_counters" ADD CONSTRAINT "notification_counters_user_id_users_id_fk" FOREIGN KEY ("user_id") REFERENCES "public"."users"("id") ON DELETE cascade ON UPDATE no action;