-- Unread counts per user (notification_counters), kept by statement-level
-- triggers with transition tables: one adjustment per statement and user,
-- whatever the number of rows, so marking all read stays one statement.
-- Counter rows are locked in user_id order, so two statements touching the
-- same users cannot deadlock on them.
LOCK TABLE "notifications" IN SHARE ROW EXCLUSIVE MODE;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION "notification_counters_after_insert"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "notification_counters" ("user_id", "unread")
  SELECT "user_id", count(*)::int FROM "new_rows" WHERE NOT "read" GROUP BY "user_id" ORDER BY "user_id"
  ON CONFLICT ("user_id") DO UPDATE SET "unread" = "notification_counters"."unread" + EXCLUDED."unread";
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION "notification_counters_after_update"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  INSERT INTO "notification_counters" ("user_id", "unread")
  SELECT "user_id", sum("delta")::int FROM (
    SELECT "user_id", CASE WHEN "read" THEN 0 ELSE 1 END AS "delta" FROM "new_rows"
    UNION ALL
    SELECT "user_id", CASE WHEN "read" THEN 0 ELSE -1 END FROM "old_rows"
  ) AS "d"
  GROUP BY "user_id" HAVING sum("delta") <> 0 ORDER BY "user_id"
  ON CONFLICT ("user_id") DO UPDATE SET "unread" = "notification_counters"."unread" + EXCLUDED."unread";
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE OR REPLACE FUNCTION "notification_counters_after_delete"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  -- An UPDATE, never an INSERT: when a user is deleted, the cascade removes its counter row too.
  UPDATE "notification_counters" AS "c" SET "unread" = "c"."unread" - "d"."n"
  FROM (SELECT "user_id", count(*)::int AS "n" FROM "old_rows" WHERE NOT "read" GROUP BY "user_id") AS "d"
  WHERE "c"."user_id" = "d"."user_id";
  RETURN NULL;
END $$;
--> statement-breakpoint
CREATE TRIGGER "notifications_count_after_insert" AFTER INSERT ON "notifications"
  REFERENCING NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "notification_counters_after_insert"();
--> statement-breakpoint
CREATE TRIGGER "notifications_count_after_update" AFTER UPDATE ON "notifications"
  REFERENCING OLD TABLE AS "old_rows" NEW TABLE AS "new_rows" FOR EACH STATEMENT EXECUTE FUNCTION "notification_counters_after_update"();
--> statement-breakpoint
CREATE TRIGGER "notifications_count_after_delete" AFTER DELETE ON "notifications"
  REFERENCING OLD TABLE AS "old_rows" FOR EACH STATEMENT EXECUTE FUNCTION "notification_counters_after_delete"();
--> statement-breakpoint
INSERT INTO "notification_counters" ("user_id", "unread")
SELECT "user_id", count(*)::int FROM "notifications" WHERE NOT "read" GROUP BY "user_id"
ON CONFLICT ("user_id") DO UPDATE SET "unread" = EXCLUDED."unread";
